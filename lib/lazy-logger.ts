import type { FastifyBaseLogger } from 'fastify'
import type { Logger } from 'pino'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Record<string, unknown>

/**
 * A request's logger, made when the request first writes at a level that is
 * on. A pino child writes its bindings out when it is made, through the
 * redaction of every logged object, and at the levels the service runs at
 * most requests write nothing: they no longer pay for a child.
 */
class LazyLogger {
  private made: Logger | null = null

  constructor (private readonly parent: Logger, private readonly own: Bindings, private readonly options: object) {}

  private get real (): Logger {
    this.made ??= this.parent.child(this.own, this.options)
    return this.made
  }

  private write (level: Level, args: unknown[]): void {
    const logger = this.made ?? this.parent
    if (!logger.isLevelEnabled(level)) return
    const real = this.real
    ;(real[level] as (...a: unknown[]) => void).apply(real, args)
  }

  get level (): string { return (this.made ?? this.parent).level }
  set level (level: string) { this.real.level = level }
  isLevelEnabled (level: string): boolean { return (this.made ?? this.parent).isLevelEnabled(level) }
  fatal (...args: unknown[]): void { this.write('fatal', args) }
  error (...args: unknown[]): void { this.write('error', args) }
  warn (...args: unknown[]): void { this.write('warn', args) }
  info (...args: unknown[]): void { this.write('info', args) }
  debug (...args: unknown[]): void { this.write('debug', args) }
  trace (...args: unknown[]): void { this.write('trace', args) }
  silent (): void {}
  child (bindings: Bindings, options?: object): FastifyBaseLogger { return this.real.child(bindings, options) as FastifyBaseLogger }
  bindings (): Bindings { return this.made === null ? { ...this.parent.bindings(), ...this.own } : this.made.bindings() }
}

/**
 * Fastify's `childLoggerFactory`: a request's logger made at its first line.
 * A route's own log level needs its child at once.
 */
export function lazyChildLogger (logger: FastifyBaseLogger, bindings: Bindings, options: { level?: string }): FastifyBaseLogger {
  if (options.level !== undefined) return logger.child(bindings, options)
  // Fastify's own logger is pino's.
  return new LazyLogger(logger as unknown as Logger, bindings, options) as unknown as FastifyBaseLogger
}
