import { randomBytes } from 'node:crypto'
import { mkdir, readdir } from 'node:fs/promises'
import path from 'node:path'

/** The stored files a backup holds, by the folder name they have in the archive. */
export interface FileRoots {
  uploads: string
  avatars: string
}

export interface StoredFile {
  /** The name in the archive, e.g. `uploads/3f2a.pdf`. */
  entry: string
  /** Where it is on disk. */
  file: string
}

async function walk (dir: string, prefix: string, found: StoredFile[]): Promise<void> {
  let items
  try {
    items = await readdir(dir, { withFileTypes: true })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  for (const item of items.sort((a, b) => a.name.localeCompare(b.name))) {
    const file = path.join(dir, item.name)
    if (item.isDirectory()) await walk(file, `${prefix}${item.name}/`, found)
    else if (item.isFile()) found.push({ entry: `${prefix}${item.name}`, file })
  }
}

/** Every regular file under the upload and avatar folders. */
export async function storedFiles (roots: FileRoots): Promise<StoredFile[]> {
  const found: StoredFile[] = []
  for (const [name, dir] of Object.entries(roots)) await walk(dir, `${name}/`, found)
  return found
}

/** Where an archive entry goes on disk; an entry name that would leave its folder is refused. */
export function filePath (roots: FileRoots, entry: string): string {
  const [root, ...rest] = entry.split('/')
  const dir = roots[root as keyof FileRoots]
  const bad = rest.length === 0 || rest.some(part => part === '' || part === '.' || part === '..' || part.includes('\0'))
  if (dir === undefined || !Object.hasOwn(roots, root) || bad) throw new Error(`the archive holds a file outside the file folders: ${entry}`)
  return path.join(dir, ...rest)
}

/** A name beside `file` to write it under before it is renamed into place. */
export async function stagingName (file: string): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true })
  return path.join(path.dirname(file), `.${path.basename(file)}.restore-${randomBytes(6).toString('hex')}`)
}
