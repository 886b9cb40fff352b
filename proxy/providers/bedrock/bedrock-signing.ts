import type { AwsCredentials } from './bedrock-options.ts';

// AWS Signature Version 4 for Bedrock runtime calls, with the AWS SDK's own signer
// (@smithy/signature-v4). The request is signed for the URL it is actually sent to, so a
// custom host (a VPC endpoint, a test mock) gets a signature for its own Host. The signer is
// loaded on the first Bedrock call: a gateway without Bedrock never pays for it (≈ 15 MiB).

export const BEDROCK_SIGNING_SERVICE = 'bedrock';

export interface SignableRequest {
  readonly url: string;
  readonly method: 'POST' | 'GET';
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The request's headers plus host, x-amz-date, x-amz-content-sha256, x-amz-security-token and authorization. */
export async function signBedrockRequest(
  request: SignableRequest,
  credentials: AwsCredentials,
  region: string,
  signingDate?: Date,
): Promise<Record<string, string>> {
  const [{ Sha256 }, { SignatureV4 }] = await Promise.all([import('@aws-crypto/sha256-js'), import('@smithy/signature-v4')]);
  const url = new URL(request.url);
  const signer = new SignatureV4({
    service: BEDROCK_SIGNING_SERVICE,
    region,
    credentials: {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...(credentials.sessionToken !== undefined ? { sessionToken: credentials.sessionToken } : {}),
    },
    sha256: Sha256,
  });
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) query[name] = value;
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port !== '' ? { port: Number(url.port) } : {}),
      // The path as it goes on the wire (model ids are percent-encoded); the signer
      // encodes it once more for the canonical request, as AWS expects.
      path: url.pathname,
      query,
      headers: { ...request.headers, host: url.host },
      body: request.body,
    },
    signingDate === undefined ? undefined : { signingDate },
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) headers[name.toLowerCase()] = value;
  return headers;
}
