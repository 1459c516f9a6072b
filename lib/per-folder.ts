import path from 'node:path'

/**
 * `read` of a folder, run once per folder and kept: the files a release
 * ships do not change while the process runs. What `read` throws is thrown
 * again on the next call, which reads afresh.
 */
export function oncePerFolder<T> (read: (dir: string) => T, shipped: string): (dir?: string) => T {
  const loaded = new Map<string, T>()
  return (dir = shipped) => {
    const key = path.resolve(dir)
    let value = loaded.get(key)
    if (value === undefined) {
      value = read(key)
      loaded.set(key, value)
    }
    return value
  }
}
