/**
 * Requests Node's HTTP parser refuses before the app sees them (a request line or headers
 * over its 16 KiB limit, bytes that are not HTTP) still get the API's error shape (api/README.md, Errors):
 * Node's own answer is a bare status line with an empty body.
 */
import { Buffer } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody } from './errors.ts';

/** The `clientError` listener of the service's HTTP server. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset or a socket already answered on: nobody to tell.
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  let status: number;
  let body: string | null = null;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    body = JSON.stringify(errorBody('headers_too_large', 'the request line and headers are larger than 16 KiB'));
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
  } else {
    status = 400;
    body = JSON.stringify(errorBody('invalid_request', 'the request is not valid HTTP/1.1'));
  }
  const head = [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, 'Connection: close'];
  if (body !== null) head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  socket.end(`${head.join('\r\n')}\r\n\r\n${body ?? ''}`);
}
