/** A bad setting: the message is one line that names it. */
export class ConfigError extends Error {
  constructor (readonly setting: string, problem: string) {
    super(`Invalid configuration: ${setting} ${problem}`)
    this.name = 'ConfigError'
  }
}
