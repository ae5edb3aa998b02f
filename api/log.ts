/**
 * JSON line logger. Callers pass explicit fields; nothing logs request bodies or
 * headers, so secrets (tokens, agent secrets, WLAN credentials) never reach the log.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(level: LogLevel = 'info', write: (line: string) => void = (l) => console.log(l)): Logger {
  const emit =
    (at: LogLevel) =>
    (msg: string, fields: LogFields = {}) => {
      if (rank[at] < rank[level]) return;
      write(JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields }));
    };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createLogger('error', () => {});
