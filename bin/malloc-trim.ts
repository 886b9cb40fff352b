// glibc keeps the memory that threads free inside its malloc arenas (one per thread: the serving
// thread, V8's GC and compiler helpers, the log worker). After traffic ≈ 20 MiB of a gateway's
// resident set is such free memory, never reused while it idles; only malloc_trim() hands those
// pages back, and Node has no binding for it. SQLite loads an extension by dlopen()ing a library
// and calling one of its functions with the connection as first argument: naming libc and
// malloc_trim calls malloc_trim(<pointer>). A pad that large leaves the top of the main heap
// alone; every arena's free pages inside it are still released (madvise). malloc_trim's result
// (1: released) reads as an initialisation error to SQLite, which then closes the library again.
// Elsewhere (musl, macOS, Windows: no libc.so.6 or no malloc_trim) the load fails and nothing
// happens (docs/performance.md, issue 32).

type SqliteModule = typeof import('node:sqlite');

/**
 * Runs glibc's malloc_trim() on every malloc arena of the process (a few ms; for idle moments only).
 * Returns false when it could not be called.
 */
export function trimMallocArenas(loadModule: () => SqliteModule = () => process.getBuiltinModule('node:sqlite')): boolean {
  let db: InstanceType<SqliteModule['DatabaseSync']> | undefined;
  try {
    // A private in-memory database that never runs a statement: extensions are allowed on it only.
    db = new (loadModule().DatabaseSync)(':memory:', { allowExtension: true });
    db.loadExtension('libc.so.6', 'malloc_trim'); // returned 0: nothing to release
    return true;
  } catch (error) {
    // "error during initialization": malloc_trim returned 1, pages were released.
    return error instanceof Error && /error during initiali[sz]ation/i.test(error.message);
  } finally {
    db?.close();
  }
}
