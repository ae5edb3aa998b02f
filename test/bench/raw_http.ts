/**
 * The bench's load generator: one keep-alive HTTP/1.1 connection per simulated agent,
 * requests written as prepared bytes, responses framed by Content-Length. Like wrk or
 * autocannon, it spends as little CPU as it can, because it shares the machine's cores
 * with the server and PostgreSQL: Node's http client costs several times more per request,
 * and every cycle it burns is taken from what is measured. Responses are not parsed beyond
 * the status line and their framing; the bench checks the status.
 */
import { Buffer } from 'node:buffer';
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  body: Buffer;
  /** The ETag header, if any. */
  etag: string | null;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** The bytes of a request: method, path, headers and an optional UTF-8 body. */
export function rawRequest(method: string, path: string, headers: Record<string, string>, body?: string): Buffer {
  const payload = body === undefined ? undefined : Buffer.from(body, 'utf8');
  let head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  if (payload) head += `Content-Length: ${payload.length}\r\n`;
  head += '\r\n';
  return payload ? Buffer.concat([Buffer.from(head, 'latin1'), payload]) : Buffer.from(head, 'latin1');
}

/** One keep-alive connection carrying one request at a time. */
export class RawConnection {
  private socket: Socket;
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;
  /** When the last answer came (or the connection opened), on `performance.now()`'s clock. */
  idleSince = performance.now();

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('the server closed the connection')));
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  send(request: Buffer): Promise<RawResponse> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.waiting) return Promise.reject(new Error('one request at a time per connection'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(request);
    });
  }

  /** False once the connection failed or the server closed it. */
  get usable(): boolean {
    return this.failure === null;
  }

  close(): void {
    this.socket.destroy();
  }

  private received(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const headerEnd = this.buffered.indexOf(HEADER_END);
    if (headerEnd === -1) return;
    const head = this.buffered.subarray(0, headerEnd).toString('latin1');
    const status = Number(head.slice(9, 12));
    // 304 and 204 carry no body (RFC 9110 §6.3), whatever their headers say.
    const length = status === 304 || status === 204 ? ['', '0'] : /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) {
      this.fail(new Error(`a response without Content-Length: ${head.split('\r\n')[0]}`));
      return;
    }
    const end = headerEnd + HEADER_END.length + Number(length[1]);
    if (this.buffered.length < end) return;
    const body = this.buffered.subarray(headerEnd + HEADER_END.length, end);
    const etag = /\r\netag:\s*([^\r]+)/i.exec(head)?.[1] ?? null;
    this.buffered = this.buffered.subarray(end);
    const waiting = this.waiting;
    this.waiting = null;
    this.idleSince = performance.now();
    waiting?.resolve({ status, body, etag });
  }

  private fail(err: Error): void {
    this.failure ??= err;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(err);
  }
}
