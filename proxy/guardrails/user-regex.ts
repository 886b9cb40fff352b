// Guardrail checks compile their patterns on the one user-regex engine (patterns/user-regex.ts);
// a refused pattern becomes the check's parameter problem at its path.
import { compileUserRegex as compileOnEngine, MAX_REGEX_TEXT_LENGTH, RegexFlagsSchema, userRegexForJsonSchema, type UserRegex } from '../patterns/user-regex.ts';
import { CheckParameterError, UserRegexError } from '../errors.ts';

export { MAX_REGEX_TEXT_LENGTH, RegexFlagsSchema, userRegexForJsonSchema, type UserRegex };

/** Compiles a check's regex, or throws CheckParameterError at `path` saying why not. */
export function compileUserRegex(source: string, flags: string, path: ReadonlyArray<string | number>): UserRegex {
  try {
    return compileOnEngine(source, flags, path);
  } catch (error) {
    if (error instanceof UserRegexError) throw new CheckParameterError(error.path, error.reason);
    throw error;
  }
}
