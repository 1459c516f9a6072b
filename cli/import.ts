import path from 'node:path'
import { plural } from '../db/backup/progress'
import { findCredentials } from '../sql/users'
import { ArchiveProblem, importArchive } from '../domain/archive-import'
import { recordKinds } from '../kinds'
import { option, withDatabase, type Command } from './command'

/** import: a family archive, as a new family of a user. */
export const importFamily: Command = {
  options: { in: { type: 'string' }, owner: { type: 'string' } },
  async run (values, config) {
    const file = path.resolve(option(values, 'in'))
    const email = option(values, 'owner')
    return withDatabase(config, async sql => {
      const owner = await findCredentials(sql, email)
      if (owner === undefined) throw new Error(`no user has the e-mail ${email}`)
      try {
        const { family, counts } = await importArchive(sql, file, owner.id, null, config)
        const records = [...recordKinds.map(({ key }) => counts[key]), counts.attachments].reduce((sum, n) => sum + n, 0)
        return `imported the family ${JSON.stringify(family.name)} (id ${family.id}) for ${owner.email}: ${counts.children} ${counts.children === 1 ? 'child' : 'children'}, ${plural(records, 'record')}, ${plural(counts.files, 'file')}`
      } catch (error) {
        if (error instanceof ArchiveProblem) throw new Error(`the archive cannot be imported: ${error.message}`)
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`there is no file ${file}`)
        throw error
      }
    })
  }
}
