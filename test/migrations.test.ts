import t, { type Test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createSql } from '../db/client'
import { changeKindsCheck } from '../db/change-kinds'
import { migrate, migrationFiles, MigrationError } from '../db/migrate'
import { CHANGE_KINDS } from '../kinds/changes'
import { testDatabase } from './helper'

function migrationsDir (t: Test, files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-migrations-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text)
  return dir
}

async function tables (sql: ReturnType<typeof createSql>): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select table_name as name from information_schema.tables where table_schema = 'public' order by 1
  `
  return rows.map(row => row.name)
}

t.test('the base schema applies on an empty database, and a second run applies nothing', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const files = await migrationFiles()
  t.equal(files[0], '00000000-000000-base-schema.sql', 'the base schema sorts first')

  const applied = await migrate(sql)
  t.same(applied, files)
  t.same(await tables(sql), [
    'allergies', 'attachments', 'calendar_feeds', 'changes', 'children', 'event_tickets', 'families', 'family_clocks', 'family_members', 'idempotency_keys', 'identity_links', 'illnesses',
    'invites', 'measurements', 'medical_events', 'medicine_courses', 'medicine_doses', 'migrations', 'notification_channels', 'notification_settings',
    'oidc_codes', 'oidc_flows', 'refresh_tokens', 'reminder_deliveries', 'row_counts', 'sessions', 'share_accesses', 'share_file_links', 'shares', 'tallies', 'temperatures', 'user_identities', 'users', 'visits', 'webhook_deliveries', 'webhooks'
  ])
  const recorded = await sql`select id, name, applied_at from migrations order by id`
  t.same(recorded.map(row => row.name), files)
  t.ok(recorded.every(row => row.applied_at instanceof Date))

  t.same(await migrate(sql), [], 'nothing left to apply')
  t.equal((await sql`select count(*)::int as n from migrations`)[0].n, files.length)
})

t.test('the migrations table is as specified', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  await migrate(sql)
  const columns = await sql`
    select column_name, data_type, character_maximum_length, is_nullable, column_default
    from information_schema.columns where table_name = 'migrations' order by ordinal_position
  `
  t.same(columns.map(c => [c.column_name, c.data_type, c.is_nullable]), [
    ['id', 'integer', 'NO'],
    ['name', 'character varying', 'NO'],
    ['applied_at', 'timestamp with time zone', 'NO']
  ])
  t.equal(columns[1].character_maximum_length, 255)
  t.match(columns[0].column_default, /nextval/)
  t.match(columns[2].column_default, /now\(\)/)
  const unique = await sql`
    select 1 from pg_indexes where tablename = 'migrations' and indexdef like '%UNIQUE%(name)%'
  `
  t.equal(unique.length, 1, 'name is unique')
})

t.test('two runners started together apply each file once', async t => {
  const { sql, url } = await testDatabase(t, { empty: true })
  const dir = migrationsDir(t, {
    '20240101-000000-first.sql': 'create table first_table (id int); select pg_sleep(0.3);',
    '20240102-000000-second.sql': 'create table second_table (id int);'
  })
  const other = createSql(url, { max: 2 })
  t.teardown(() => other.end())
  const [a, b] = await Promise.all([migrate(sql, { dir }), migrate(other, { dir })])
  t.same([...a, ...b].sort(), ['20240101-000000-first.sql', '20240102-000000-second.sql'], 'each file applied by exactly one runner')
  const rows = await sql`select name from migrations order by name`
  t.same(rows.map(row => row.name), ['20240101-000000-first.sql', '20240102-000000-second.sql'])
})

t.test('a broken migration rolls back, names its file and stops', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const dir = migrationsDir(t, {
    '20240101-000000-good.sql': 'create table good_table (id int);',
    '20240102-000000-broken.sql': 'create table half_done (id int);\ninsert into half_done values (1);\nselect * from no_such_table;',
    '20240103-000000-after.sql': 'create table after_table (id int);'
  })
  const error = await migrate(sql, { dir }).then(() => null, (e: unknown) => e)
  t.ok(error instanceof MigrationError, 'a MigrationError')
  t.equal((error as MigrationError).file, '20240102-000000-broken.sql')
  t.match((error as MigrationError).message, /^Migration 20240102-000000-broken\.sql failed: relation "no_such_table" does not exist$/)
  t.same(await tables(sql), ['good_table', 'migrations'], 'the broken file left nothing, the later one did not run')
  t.same((await sql`select name from migrations`).map(row => row.name), ['20240101-000000-good.sql'])
})

t.test('a file with a bad name is refused before anything runs', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const dir = migrationsDir(t, { 'add-things.sql': 'create table x (id int);' })
  await t.rejects(migrate(sql, { dir }), /Migration add-things\.sql failed: the name must be YYYYMMDD-HHMMSS-description\.sql/)
  t.same(await tables(sql), [])
})

t.test('the change log takes every kind the registry names and refuses any other, as migrate makes its check', async t => {
  const { sql } = await testDatabase(t)
  const [family] = await sql`insert into families (name) values ('Checked') returning id`
  const change = (kind: string) => sql`insert into changes (family_id, kind, record_id, op, version) values (${family.id}, ${kind}, 1, 'created', 1)`
  for (const kind of CHANGE_KINDS) await t.resolves(change(kind), `${kind} is taken`)
  await t.rejects(change('rash'), /changes_kind_check/, 'a kind the registry does not name is refused')
  t.same(await migrate(sql), [], 'migrate again finds nothing to do')

  // A registry with one kind more: the check follows it, once.
  const conn = await sql.reserve()
  t.teardown(() => conn.release())
  const more = [...CHANGE_KINDS, 'rash']
  const statements = await changeKindsCheck(conn, more)
  t.ok(statements, 'a kind more makes the check again')
  await conn.unsafe(statements ?? '').simple()
  await t.resolves(change('rash'), 'and the new kind is taken')
  t.equal(await changeKindsCheck(conn, more), null, 'then it is as the registry says')
  await sql`delete from changes where kind = 'rash'`
  await migrate(sql)
  await t.rejects(change('rash'), /changes_kind_check/, 'migrate puts back the registry\'s kinds')
  await t.rejects(changeKindsCheck(conn, ["x'); drop table users; --"]), /Not a kind's name/, 'a name is only letters')
})
