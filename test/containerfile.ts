import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'

export const ROOT = path.join(__dirname, '..')
export const run = promisify(execFile)

export interface Instruction {
  keyword: string
  args: string
}

export interface Stage {
  name: string | null
  image: string
  steps: Instruction[]
}

/** The Containerfile's instructions, with continued lines joined and comments left out. */
export function parse (text: string): Stage[] {
  const joined = text.replace(/\\\n/g, ' ').split('\n').map(line => line.trim()).filter(line => line !== '' && !line.startsWith('#'))
  const stages: Stage[] = []
  for (const line of joined) {
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line) ?? []
    if (keyword.toUpperCase() === 'FROM') {
      const [image, , name] = args.split(/\s+/)
      stages.push({ name: name ?? null, image, steps: [] })
    } else {
      stages[stages.length - 1].steps.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

/** Leading `--flag=value` options, then the words or the JSON array that follow. */
export function split (args: string): { flags: Record<string, string>, words: string[] } {
  const flags: Record<string, string> = {}
  let rest = args
  for (let match = /^--([a-z-]+)=(\S+)\s+/.exec(rest); match !== null; match = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
    flags[match[1]] = match[2]
    rest = rest.slice(match[0].length)
  }
  return { flags, words: rest.startsWith('[') ? JSON.parse(rest) : rest.split(/\s+/) }
}

export function all (stage: Stage, keyword: string): Instruction[] {
  return stage.steps.filter(step => step.keyword === keyword)
}

export function lastOf (stage: Stage, keyword: string): Instruction | undefined {
  return all(stage, keyword).at(-1)
}

/** ENV in the key=value form, possibly several on one instruction. */
export function environment (stage: Stage): Record<string, string> {
  const env: Record<string, string> = {}
  for (const step of all(stage, 'ENV')) {
    for (const pair of step.args.split(/\s+/)) {
      const [key, ...value] = pair.split('=')
      env[key] = value.join('=').replace(/^"(.*)"$/, '$1')
    }
  }
  return env
}

export const stages = parse(readFileSync(path.join(ROOT, 'Containerfile'), 'utf8'))
export const final = stages[stages.length - 1]
export const finalEnv = environment(final)
export const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map(line => line.trim()).filter(line => line !== '' && !line.startsWith('#'))

/** The final stage's HEALTHCHECK: its options and its command's words. */
export function healthcheck (): { flags: Record<string, string>, words: string[] } | null {
  const step = lastOf(final, 'HEALTHCHECK')
  return step === undefined ? null : split(step.args.replace(/^(.*?)CMD\s+/, '$1'))
}

/** Runs the health check's command against a service on `port`: its exit code. */
export function runHealthcheck (words: string[], port: number): Promise<number> {
  return run(process.execPath, words.slice(1), { env: { PATH: process.env.PATH, PORT: String(port) } })
    .then(() => 0, (error: { code?: number }) => error.code ?? 1)
}

/** A stage's /app, made by doing its COPY and RUN steps here; `npm ci` stands for the project's installed node_modules. */
export async function simulate (stage: Stage, dir: string, built: Map<string, string>): Promise<void> {
  for (const step of stage.steps) {
    if (step.keyword === 'COPY') {
      const { flags, words } = split(step.args)
      const target = path.join(dir, words[words.length - 1])
      for (const source of words.slice(0, -1)) {
        const from = flags.from === undefined ? path.join(ROOT, source) : path.join(built.get(flags.from) as string, path.relative('/app', source))
        const into = words.length > 2 || target.endsWith('/') ? path.join(target, path.basename(source)) : target
        if (!existsSync(from)) throw new Error(`COPY ${step.args}: ${source} does not exist`)
        cpSync(from, into, { recursive: true, verbatimSymlinks: true })
      }
    } else if (step.keyword === 'RUN' && /\bnpm ci\b/.test(step.args)) {
      if (!existsSync(path.join(dir, 'node_modules'))) symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'))
    } else if (step.keyword === 'RUN' && /\bnpm run build\b/.test(step.args)) {
      await run('npm', ['run', 'build'], { cwd: dir })
    } else if (step.keyword === 'RUN') {
      mkdirSync(dir, { recursive: true })
    }
  }
}
