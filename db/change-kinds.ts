import type { ReservedSql } from 'postgres'
import { CHANGE_KINDS } from '../kinds/changes'

/** A kind's name as the check lists it: letters only, so it is written as a literal safely. */
const NAME = /^[a-z][A-Za-z]*$/

/**
 * The check of the change log's kinds, made from the registry: `changes.kind`
 * takes exactly the kinds that change (kinds/changes.ts), the kinds of
 * records with them. It is stated here once, not by each kind's migration:
 * migrate applies it after the migrations, and again only when the
 * registry's kinds differ from those the check was made for (its comment
 * names them). Answers the statements that make it, or null when the check
 * is as the registry says, or the database has no change log yet.
 */
export async function changeKindsCheck (conn: ReservedSql, kinds: readonly string[] = CHANGE_KINDS): Promise<string | null> {
  for (const kind of kinds) if (!NAME.test(kind)) throw new Error(`Not a kind's name: ${kind}`)
  const wanted = kinds.join(',')
  const [state] = await conn<Array<{ table: boolean, made: string | null }>>`
    select to_regclass('changes') is not null as table,
      (select obj_description(c.oid, 'pg_constraint') from pg_constraint c
       where c.conname = 'changes_kind_check' and c.conrelid = to_regclass('changes')) as made
  `
  if (!state.table || state.made === wanted) return null
  return `
    alter table changes drop constraint if exists changes_kind_check;
    alter table changes add constraint changes_kind_check check (kind in (${kinds.map(kind => `'${kind}'`).join(', ')}));
    comment on constraint changes_kind_check on changes is '${wanted}';
  `
}
