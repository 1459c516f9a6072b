import t, { type Test } from 'tap'
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { Sql } from '../db/client'
import { FUNCTIONS_DIR, functionFiles, migrate, migrationFiles, MIGRATIONS_DIR } from '../db/migrate'
import { tempDir, testDatabase } from './helper'

/** Every function of the public schema that is not an extension's, with its definition as PostgreSQL states it. */
async function functions (sql: Sql): Promise<Array<{ name: string, args: string, definition: string }>> {
  return await sql<Array<{ name: string, args: string, definition: string }>>`
    select p.proname as name, pg_get_function_identity_arguments(p.oid) as args, pg_get_functiondef(p.oid) as definition
    from pg_proc p
    where p.pronamespace = 'public'::regnamespace
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    order by 1, 2
  `
}

/** A copy of db/functions, with one file's text changed. */
function functionsWith (t: Test, file: string, text: string): string {
  const dir = tempDir(t, 'child-health-functions-')
  for (const name of readdirSync(FUNCTIONS_DIR)) copyFileSync(path.join(FUNCTIONS_DIR, name), path.join(dir, name))
  writeFileSync(path.join(dir, file), text)
  return dir
}

const ROOT = path.join(__dirname, '..')

/** The functions a file creates or replaces, by name. */
function definedIn (text: string): string[] {
  return [...text.matchAll(/create\s+(?:or\s+replace\s+)?function\s+(?:public\.)?"?([a-z_][a-z0-9_]*)"?\s*\(/gi)].map(match => match[1].toLowerCase())
}

/** For each function, the last file that defines it: the migrations in their order, then db/functions. */
async function lastDefinitions (): Promise<Map<string, string>> {
  const last = new Map<string, string>()
  const files = [
    ...(await migrationFiles()).map(name => path.join(MIGRATIONS_DIR, name)),
    ...(await functionFiles()).map(name => path.join(FUNCTIONS_DIR, name))
  ]
  for (const file of files) {
    for (const name of definedIn(readFileSync(file, 'utf8'))) last.set(name, path.relative(ROOT, file).split(path.sep).join('/'))
  }
  return last
}

/** The rows of db/functions/README.md's table: function and the file it names. */
function indexRows (): Array<{ name: string, file: string }> {
  const text = readFileSync(path.join(FUNCTIONS_DIR, 'README.md'), 'utf8')
  return [...text.matchAll(/^\| `([^`]+)` \| `([^`]+)` \| .+ \|$/gm)].map(match => ({ name: match[1], file: match[2] }))
}

t.test('a new database and one upgraded a migration at a time end with the same functions', async t => {
  const fresh = await testDatabase(t, { empty: true })
  await migrate(fresh.sql)

  // Each earlier version applied its migrations without db/functions, one at a time.
  const upgraded = await testDatabase(t, { empty: true })
  const dir = tempDir(t, 'child-health-migrations-')
  for (const file of await migrationFiles()) {
    copyFileSync(path.join(MIGRATIONS_DIR, file), path.join(dir, file))
    t.same(await migrate(upgraded.sql, { dir }), [file], `${file} on its own`)
  }
  t.same(await migrate(upgraded.sql), [], 'then this version: no migration left')
  t.same(await functions(upgraded.sql), await functions(fresh.sql), 'the same functions, defined alike')
})

t.test('db/functions/README.md names every function once, with the last file that defines it', async t => {
  const { sql } = await testDatabase(t)
  const made = [...new Set((await functions(sql)).map(row => row.name))].sort()
  const rows = indexRows()
  const listed = rows.map(row => row.name)
  t.same([...listed].sort(), made, 'every function of a migrated database is listed, and nothing else')
  t.equal(new Set(listed).size, listed.length, 'each once')
  const last = await lastDefinitions()
  for (const row of rows) t.equal(row.file, last.get(row.name), `${row.name} is defined today in ${row.file}`)
  for (const file of await functionFiles()) {
    const names = definedIn(readFileSync(path.join(FUNCTIONS_DIR, file), 'utf8'))
    t.same(names, [file.replace(/\.sql$/, '')], `db/functions/${file} defines its one function, named for it`)
  }
})

t.test('migrate applies the functions on every run: a second run changes nothing, a changed file changes its function', async t => {
  const { sql } = await testDatabase(t)
  const before = await functions(sql)
  t.same(await migrate(sql), [], 'no migration left')
  t.same(await functions(sql), before, 'the functions are as the migrations and db/functions left them')

  const body = "create or replace function change_actor() returns integer language sql stable as $$\n  select 7\n$$;\n"
  t.same(await migrate(sql, { functions: functionsWith(t, 'change_actor.sql', body) }), [])
  t.equal((await sql`select change_actor() as actor`)[0].actor, 7, 'the changed body is applied')
  const today = before.find(row => row.name === 'change_actor')?.definition ?? ''
  await migrate(sql, { functions: functionsWith(t, 'change_actor.sql', `${today};\n`) })
  t.same(await functions(sql), before, 'and a file with the body of today puts it back')
})

t.test('a failing function file leaves every function as it was, and names the file', async t => {
  const { sql } = await testDatabase(t)
  const before = await functions(sql)
  const dir = functionsWith(t, 'touch_memberships.sql', 'create or replace function touch_memberships() returns trigger language plpgsql as $$ begin $$;\n')
  writeFileSync(path.join(dir, 'change_actor.sql'), "create or replace function change_actor() returns integer language sql stable as $$\n  select 7\n$$;\n")
  await t.rejects(migrate(sql, { functions: dir }), /Migration functions\/touch_memberships\.sql failed/)
  t.same(await functions(sql), before, 'change_actor, applied before it in the same transaction, is as it was')
  const [{ held }] = await sql`select count(*)::int as held from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`
  t.equal(held, 0, 'and the migration lock is released')
})

t.test('a migration from another folder applies no functions unless told', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const dir = tempDir(t, 'child-health-migrations-')
  copyFileSync(path.join(MIGRATIONS_DIR, '00000000-000000-base-schema.sql'), path.join(dir, '00000000-000000-base-schema.sql'))
  await migrate(sql, { dir })
  t.same(await functions(sql), [], 'the base schema has none, and db/functions was not applied')
})
