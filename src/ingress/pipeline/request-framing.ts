import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../../shared/errors.js';

// Request smuggling: with two Content-Length headers uWS uses the first and parses the bytes after
// it as the next request on the connection, while a lenient proxy in front may have used the last
// and forwarded those bytes as body. uWS exposes every header through req.forEach, so the duplicate
// is visible here; the request is refused (400, connection closed). The same holds for a
// Transfer-Encoding other than chunked (uWS reads no body at all; RFC 9112 6.3 says refuse).
//
// uWS parses every request already in the socket's buffer in one go, even after a response with
// Connection: close, so the smuggled request reaches a handler right after the refused one, in the
// same turn of the event loop. Requests from the same client address in that turn are therefore
// refused too (never run). A legitimate request from the same address in the same turn on another
// connection is refused as well; it is rare and safe to retry.

let suspectAddress: string | undefined;

function clearSuspect(): void {
  suspectAddress = undefined;
}

function remoteAddress(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

function ambiguous(): GatewayError {
  return new GatewayError('invalid_request_framing', 'The request framing is ambiguous (several Content-Length headers, or a Transfer-Encoding other than chunked); the connection is closed.');
}

function suspect(res: HttpResponse): GatewayError {
  if (suspectAddress === undefined) setImmediate(clearSuspect);
  suspectAddress = remoteAddress(res);
  return ambiguous();
}

/** The framing error of this request, if any. Cheap for requests without a body (no header walk). */
export function framingError(res: HttpResponse, req: HttpRequest): GatewayError | undefined {
  if (suspectAddress !== undefined && remoteAddress(res) === suspectAddress) return ambiguous();
  const transferEncoding = req.getHeader('transfer-encoding');
  if (transferEncoding !== '' && transferEncoding.toLowerCase() !== 'chunked') return suspect(res);
  if (req.getHeader('content-length') === '') return undefined;
  let lengths = 0;
  req.forEach((name) => {
    if (name === 'content-length') lengths++;
  });
  return lengths < 2 ? undefined : suspect(res);
}
