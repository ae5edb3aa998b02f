/**
 * The bench's "far from the primary" (`--primary-delay-ms=N`): a TCP proxy on loopback
 * between the API and the primary that holds every chunk N/2 ms in each direction, so a
 * round trip to the primary costs N ms more, as it does for an API instance near the agents
 * and far from the database. Order is kept (timers of equal delay fire in order).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface DelayProxy {
  port: number;
  close(): Promise<void>;
}

function relay(from: Socket, to: Socket, delayMs: number): void {
  from.on('data', (chunk: Buffer) => {
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, delayMs);
  });
  from.on('end', () => setTimeout(() => to.end(), delayMs));
  from.on('error', () => to.destroy());
  from.on('close', () => setTimeout(() => to.destroy(), delayMs));
}

/** Listens on a free loopback port and forwards to `target` with `roundTripMs / 2` each way. */
export async function startDelayProxy(
  target: { host: string; port: number },
  roundTripMs: number,
): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect(target, () => upstream.setNoDelay(true));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    relay(client, upstream, roundTripMs / 2);
    relay(upstream, client, roundTripMs / 2);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
