import type { TaskList, WorkerEvents } from 'graphile-worker'

/** Jobs of each task one instance works on at once, at most. */
export type Capacity = Record<string, number>

export interface Capacities {
  /** The tasks whose jobs a worker looking for one now must not take: those at capacity. */
  forbiddenFlags: () => string[]
  /** The task list, each task counted while it runs. */
  taskList: TaskList
}

/**
 * Capacity of its own for each task of one graphile-worker runner: every
 * job carries its task's name among its flags (sql/queue.ts), and a worker
 * looking for a job skips the tasks whose jobs in work, together with the
 * jobs other workers are taking at that moment (of any task, as far as
 * anyone knows), fill their capacity. With a runner of as many workers as
 * the capacities add up to, no task's jobs wait behind another's, and one
 * runner listens for new jobs, so the workers of several runners do not all
 * look for the same job at once.
 */
export function capacities (events: WorkerEvents, capacity: Capacity, tasks: TaskList): Capacities {
  const running = new Map<string, number>()
  // The workers between asking for a job and getting one (or none).
  const taking = new Set<string>()
  events.on('worker:getJob:start', ({ worker }) => { taking.add(worker.workerId) })
  events.on('job:start', ({ worker }) => { taking.delete(worker.workerId) })
  events.on('worker:getJob:empty', ({ worker }) => { taking.delete(worker.workerId) })
  events.on('worker:getJob:error', ({ worker }) => { taking.delete(worker.workerId) })
  events.on('pool:create', () => { taking.clear() })

  const taskList: TaskList = {}
  for (const [name, task] of Object.entries(tasks)) {
    if (task === undefined) continue
    taskList[name] = async (payload, helpers) => {
      running.set(name, (running.get(name) ?? 0) + 1)
      try {
        await task(payload, helpers)
      } finally {
        running.set(name, (running.get(name) ?? 1) - 1)
      }
    }
  }
  return {
    forbiddenFlags: () => Object.keys(capacity).filter(name => (running.get(name) ?? 0) + taking.size >= capacity[name]),
    taskList
  }
}
