// The validators and serializers the build wrote out (compiled/, beside the
// built code): a start finds each by its key and loads its code only when a
// request first needs it. From source (tsx) there are none, and the app
// compiles its schemas as it starts.
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { ValidateFunction } from 'ajv'
import type { Precompiled } from '../lib/compiled-schemas'

/** Where the build writes them, and where the built service finds them. */
export const COMPILED_DIR = path.join(__dirname, '..', 'compiled')
/** The list of keys the build wrote, one file each. */
export const COMPILED_INDEX = 'index.json'
/** The vaccine schedule files' validator, which the build writes out too. */
export const SCHEDULE_VALIDATOR = 'vaccine-schedule.js'

/** The schedule files' validator the build wrote out, or undefined. */
export function writtenScheduleValidator (dir = COMPILED_DIR): ValidateFunction | undefined {
  const file = path.join(dir, SCHEDULE_VALIDATOR)
  return existsSync(file) ? require(file) as ValidateFunction : undefined
}

type Compiled = ((value: unknown) => unknown) & { errors?: unknown }

/**
 * A function that loads its code on its first call. Fastify calls a
 * validator or serializer with the one value; a validator's errors are read
 * from the function Fastify holds, so they are passed on.
 */
function loadedOnUse (file: string): Compiled {
  let loaded: Compiled | undefined
  const compiled: Compiled = (value: unknown) => {
    loaded ??= require(file) as Compiled
    const result = loaded(value)
    compiled.errors = loaded.errors
    return result
  }
  return compiled
}

/** The functions the build wrote out in `dir`, or undefined when there are none. */
export function loadPrecompiled (dir = COMPILED_DIR): Precompiled | undefined {
  const index = path.join(dir, COMPILED_INDEX)
  if (!existsSync(index)) return undefined
  const keys = new Set(JSON.parse(readFileSync(index, 'utf8')) as string[])
  const made = new Map<string, Compiled>()
  return {
    find (key) {
      if (!keys.has(key)) return undefined
      let compiled = made.get(key)
      if (compiled === undefined) {
        compiled = loadedOnUse(path.join(dir, `${key}.js`))
        made.set(key, compiled)
      }
      return compiled
    }
  }
}
