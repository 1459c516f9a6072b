import http from 'node:http'
import type { Target } from './report'
import type { World } from './scenarios'
import type { SeededChild } from './seed'

export interface BatchTime {
  operations: number
  /** Each run's time in ms, from the first request written to the last answer read. */
  singles: number[]
  atomic: number[]
  separate: number[]
}

interface Answer { status: number, text: string }

/** One request on the agent's keep-alive connection. */
async function request (agent: http.Agent, url: URL, method: string, headers: Record<string, string>, body: string): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, res => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }))
      res.on('error', reject)
    })
    req.setTimeout(120_000, () => req.destroy(new Error('no answer within 120 s')))
    req.on('error', reject)
    req.end(body)
  })
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

/**
 * 500 creates of measurements for one child, three ways, each over one
 * keep-alive connection: 500 single requests one after the other, one atomic
 * batch, and one batch whose operations commit each on its own. Each way runs
 * `runs` times, in turns.
 */
export async function batchAgainstSingles (world: World, child: SeededChild, operations = 500, runs = 3): Promise<BatchTime> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const headers = { authorization: `Bearer ${world.tokens.get(child.userId) as string}`, 'content-type': 'application/json' }
  const day = new Date().toISOString().slice(0, 10)
  const body = (i: number): Record<string, unknown> => ({ measuredAt: day, heightCm: 121.4, weightKg: 23.35, notes: `queued offline ${i}` })
  const path = `/api/children/${child.id}/measurements`
  const result: BatchTime = { operations, singles: [], atomic: [], separate: [] }
  const timed = async (work: () => Promise<void>): Promise<number> => {
    const start = process.hrtime.bigint()
    await work()
    return Math.round(Number(process.hrtime.bigint() - start) / 1e6)
  }
  try {
    for (let run = 0; run < runs; run++) {
      result.singles.push(await timed(async () => {
        for (let i = 0; i < operations; i++) {
          const answer = await request(agent, new URL(path, world.serviceUrl), 'POST', headers, JSON.stringify(body(i)))
          if (answer.status !== 201) throw new Error(`a single create answered ${answer.status}: ${answer.text.slice(0, 300)}`)
        }
      }))
      for (const atomic of [true, false]) {
        const batch = JSON.stringify({ atomic, operations: Array.from({ length: operations }, (_, i) => ({ method: 'POST', path, body: body(i) })) })
        const ms = await timed(async () => {
          const answer = await request(agent, new URL(`/api/families/${child.familyId}/batch`, world.serviceUrl), 'POST', headers, batch)
          const results = answer.status === 200 ? (JSON.parse(answer.text) as { results: Array<{ status: number }> }).results : []
          if (results.length !== operations || results.some(item => item.status !== 201)) throw new Error(`the batch answered ${answer.status}: ${answer.text.slice(0, 300)}`)
        })
        ;(atomic ? result.atomic : result.separate).push(ms)
      }
    }
  } finally {
    agent.destroy()
  }
  return result
}

/** The batch's figures, reported beside the other targets (no target of their own). */
export function batchTargets (time: BatchTime | null): Target[] {
  if (time === null) return []
  const singles = median(time.singles)
  const line = (name: string, runs: number[]): Target => ({
    target: `${time.operations} creates as one ${name} batch against ${time.operations} single requests, one keep-alive connection, median ms`,
    figure: `${median(runs)} ms against ${singles} ms (${(singles / median(runs)).toFixed(1)} × faster; batch runs ${runs.join(', ')} ms, singles ${time.singles.join(', ')} ms)`,
    met: null
  })
  return [line('atomic', time.atomic), line('non-atomic', time.separate)]
}
