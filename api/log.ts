/**
 * JSON line logger (pino) behind the small interface the code uses: `log.info(msg, fields)`.
 * Callers pass explicit fields; nothing logs request bodies or headers, so secrets (tokens,
 * agent secrets, WLAN credentials) never reach the log. The redaction below is a second
 * line of defence for field names that would only ever hold a secret.
 */
import { pino } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const secretFields = ['authorization', 'agent_secret', 'bootstrap_token', 'admin_token', 'password', 'psk'];

/**
 * A logger at `level` writing one JSON object per line (`time`, `level`, `msg`, fields) to
 * stdout, or to `write` (one line without its newline) when given.
 */
export function createLogger(level: LogLevel = 'info', write?: (line: string) => void): Logger {
  const destination = write
    ? { write: (chunk: string) => write(chunk.endsWith('\n') ? chunk.slice(0, -1) : chunk) }
    : pino.destination({ dest: 1, sync: true });
  const logger = pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: secretFields, censor: '[redacted]' },
    },
    destination,
  );
  return {
    debug: (msg, fields) => logger.debug(fields ?? {}, msg),
    info: (msg, fields) => logger.info(fields ?? {}, msg),
    warn: (msg, fields) => logger.warn(fields ?? {}, msg),
    error: (msg, fields) => logger.error(fields ?? {}, msg),
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
