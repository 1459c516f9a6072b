import { execFileSync } from 'node:child_process'
import { createSql, type Tx } from '../../db/client'
import { settings } from './settings'

export interface SeededChild {
  id: number
  familyId: number
  /** The family's owner, registered through the API. */
  userId: number
}

export type Counts = Record<string, number>

/**
 * Children in the registered families. Born 3 to 12 years ago, so both WHO
 * references are used; measurements follow a plausible growth curve with some noise.
 */
async function seedChildren (tx: Tx): Promise<void> {
  await tx`
    insert into children (family_id, name, date_of_birth, sex)
    select f.id,
           (array['Ada', 'Ben', 'Chloé', 'Dev', 'Elif', 'Finn', 'Grace', 'Hugo', 'Iris', 'Jonas'])[1 + (f.id * 3 + k) % 10],
           current_date - (1100 + floor(random() * 3300))::int,
           case when (f.id + k) % 2 = 0 then 'female' else 'male' end
    from families f cross join generate_series(1, ${settings.childrenPerFamily}) k
    order by f.id, k
  `
}

async function seedVisits (tx: Tx): Promise<void> {
  await tx`
    insert into visits (child_id, date, type, provider, notes)
    select c.id,
           c.date_of_birth + floor(random() * (current_date - c.date_of_birth + 1))::int,
           (array['wellness', 'wellness', 'wellness', 'wellness', 'sick', 'sick', 'injury', 'vision', 'dental', 'dental'])[1 + (k * 7 + c.id) % 10],
           (array['Dr. Martin', 'Dr. Okafor', 'Dr. Lindqvist', 'City Pediatrics', null])[1 + k % 5],
           case when k % 3 = 0 then 'Routine check, nothing to report.' end
    from children c cross join generate_series(1, ${settings.visitsPerChild}) k
  `
}

/** One measurement at each visit, the rest spread from birth to today, inserted in date order across children. */
async function seedMeasurements (tx: Tx): Promise<void> {
  const spread = settings.measurementsPerChild - settings.visitsPerChild
  await tx`
    with points as (
      select v.child_id, v.id as visit_id, v.date as measured_at from visits v
      union all
      select c.id, null, c.date_of_birth + ((k - 1) * (current_date - c.date_of_birth) / ${spread - 1})
      from children c cross join generate_series(1, ${spread}) k
    ), aged as (
      select p.*, ((p.measured_at - c.date_of_birth) / 365.25)::numeric as age
      from points p join children c on c.id = p.child_id
    )
    insert into measurements (child_id, visit_id, measured_at, height_cm, weight_kg, head_circumference_cm, notes)
    select child_id, visit_id, measured_at,
           round((50 + 31 * ln(1 + 1.3 * age)) * (0.98 + random()::numeric * 0.04), 1),
           round((3.3 + 6 * ln(1 + 1.6 * age) + 0.8 * age) * (0.95 + random()::numeric * 0.1), 3),
           case when age < 3 then round((34.5 + 8 * ln(1 + 2.5 * age)) * (0.98 + random()::numeric * 0.04), 1) end,
           case when random() < 0.1 then 'Measured at home' end
    from aged
    order by measured_at, child_id
  `
}

async function seedOtherRecords (tx: Tx): Promise<void> {
  await tx`
    insert into medical_events (child_id, date, type, name, description)
    select c.id,
           c.date_of_birth + floor(random() * (current_date - c.date_of_birth + 1))::int,
           (array['vaccine', 'vaccine', 'vaccine', 'vaccine', 'procedure', 'medication'])[1 + k % 6],
           (array['MMR', 'DTaP', 'Hepatitis B', 'Polio', 'Ear tube placement', 'Amoxicillin'])[1 + k % 6],
           case when k % 4 = 0 then 'Left arm, no reaction.' end
    from children c cross join generate_series(1, ${settings.medicalEventsPerChild}) k
  `
  await tx`
    insert into illnesses (child_id, start_date, end_date, diagnosis, symptoms, temperature_c)
    select c.id, s.start_date, least(s.start_date + 1 + k % 9, current_date),
           (array['Common cold', 'Otitis media', 'Gastroenteritis', 'Bronchiolitis'])[1 + k % 4],
           'Fever, tiredness', round(37.2 + random()::numeric * 2.6, 1)
    from children c cross join generate_series(1, ${settings.illnessesPerChild}) k
    cross join lateral (select c.date_of_birth + floor(random() * (current_date - c.date_of_birth - 10) + k * 0)::int as start_date) s
  `
  await tx`
    insert into attachments (child_id, visit_id, file_name, stored_name, content_type, size_bytes)
    select c.id,
           case when k % 2 = 0 then (select v.id from visits v where v.child_id = c.id order by v.id offset k limit 1) end,
           case when k % 3 = 0 then 'photo-' || k || '.jpg' else 'report-' || k || '.pdf' end,
           replace(gen_random_uuid()::text, '-', '') || case when k % 3 = 0 then '.jpg' else '.pdf' end,
           case when k % 3 = 0 then 'image/jpeg' else 'application/pdf' end,
           20000 + floor(random() * 2000000)::int
    from children c cross join generate_series(1, ${settings.attachmentsPerChild}) k
  `
}

/** Fills the registered families with children and their records, through SQL for speed. */
export async function seed (url: string): Promise<{ children: SeededChild[], counts: Counts }> {
  const sql = createSql(url, { max: 1 })
  try {
    await sql.begin(async tx => {
      await tx`select setseed(0.42)`
      await seedChildren(tx)
      await seedVisits(tx)
      await seedMeasurements(tx)
      await seedOtherRecords(tx)
    })
    // Settled before any scenario, as on a machine that has run a while:
    // statistics, visibility and hint bits set, and the bulk load written
    // out, so that no scenario pays for the seeding's aftermath.
    await sql`vacuum (analyze)`
    await sql`checkpoint`
    const children = await sql<SeededChild[]>`
      select c.id, c.family_id as "familyId", m.user_id as "userId"
      from children c join family_members m on m.family_id = c.family_id and m.role = 'owner'
      order by c.id
    `
    const [counts] = await sql<Counts[]>`
      select (select count(*) from families) as families, (select count(*) from users) as users,
             (select count(*) from children) as children, (select count(*) from measurements) as measurements,
             (select count(*) from visits) as visits, (select count(*) from medical_events) as "medicalEvents",
             (select count(*) from illnesses) as illnesses, (select count(*) from attachments) as attachments
    `
    return { children: [...children], counts }
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** The large data of the second part of the run: totals over the whole instance, and one child with many measurements. */
export const LARGE = {
  families: 1000,
  children: 2000,
  measurements: 2_000_000,
  visits: 200_000,
  bigChildMeasurements: 50_000
}

/**
 * Grows the instance to LARGE: new families with an owner and two children
 * each, their visits and measurements, and `bigChildId` up to 50,000
 * measurements. Written in bulk with the change log paused, as a restore
 * writes; the kept counts are counted afresh after, and every family's
 * clock gets a new epoch.
 */
export async function growLarge (url: string, bigChildId: number): Promise<Counts> {
  const sql = createSql(url, { max: 1, connection: { statement_timeout: 0 } })
  try {
    await sql.begin(async tx => {
      await tx`select set_config('app.tracking', 'off', true)`
      await tx`select setseed(0.24)`
      const [{ families, children, measurements, visits }] = await tx<Counts[]>`
        select (select count(*) from families)::int as families, (select count(*) from children)::int as children,
               (select count(*) from measurements)::int as measurements, (select count(*) from visits)::int as visits
      `
      const newFamilies = LARGE.families - families
      await tx`
        create temporary table grown on commit drop as
        select k, nextval(pg_get_serial_sequence('users', 'id'))::int as user_id,
               nextval(pg_get_serial_sequence('families', 'id'))::int as family_id
        from generate_series(1, ${newFamilies}) k
      `
      await tx`
        insert into users (id, email, password_hash, name)
        select user_id, 'large' || k || '@example.org', (select password_hash from users order by id limit 1), 'Parent L' || k from grown
      `
      await tx`insert into families (id, name) select family_id, 'Family L' || k from grown`
      await tx`insert into family_members (family_id, user_id, role) select family_id, user_id, 'owner' from grown`
      await tx`insert into family_clocks (family_id) select family_id from grown`
      const perFamily = Math.round((LARGE.children - children) / newFamilies)
      await tx`
        insert into children (family_id, name, date_of_birth, sex)
        select g.family_id, (array['Ada', 'Ben', 'Chloé', 'Dev', 'Elif'])[1 + (g.k + j) % 5],
               current_date - (1100 + floor(random() * 3300))::int, case when (g.k + j) % 2 = 0 then 'female' else 'male' end
        from grown g cross join generate_series(1, ${perFamily}) j
      `
      const newChildren = newFamilies * perFamily
      const visitsEach = Math.round((LARGE.visits - visits) / newChildren)
      await tx`
        insert into visits (child_id, date, type, provider)
        select c.id, c.date_of_birth + floor(random() * (current_date - c.date_of_birth + 1))::int,
               (array['wellness', 'wellness', 'sick', 'injury', 'vision', 'dental'])[1 + (n + c.id) % 6], 'Dr. Okafor'
        from children c join grown g on g.family_id = c.family_id cross join generate_series(1, ${visitsEach}) n
      `
      const measurementsEach = Math.round((LARGE.measurements - measurements - LARGE.bigChildMeasurements) / newChildren)
      await tx`
        insert into measurements (child_id, measured_at, height_cm, weight_kg)
        select c.id, c.date_of_birth + ((n - 1) * (current_date - c.date_of_birth) / ${measurementsEach - 1}),
               round(50 + random()::numeric * 80, 1), round(3 + random()::numeric * 25, 3)
        from children c join grown g on g.family_id = c.family_id cross join generate_series(1, ${measurementsEach}) n
      `
      // The one child weighed many times a day since birth.
      const [{ has }] = await tx<Array<{ has: number }>>`select count(*)::int as has from measurements where child_id = ${bigChildId}`
      await tx`
        insert into measurements (child_id, measured_at, height_cm, weight_kg)
        select c.id, c.date_of_birth + (k % (current_date - c.date_of_birth + 1)), round(50 + random()::numeric * 80, 1), round(3 + random()::numeric * 25, 3)
        from children c cross join generate_series(1, ${LARGE.bigChildMeasurements - has}) k
        where c.id = ${bigChildId}
      `
      await tx`select recount_rows()`
      await tx`select recount_tallies()`
      // Written without the change log, so every family gets a new epoch, as after a restore: no answer held from before is served again.
      await tx`update family_clocks set epoch = substr(md5(random()::text || clock_timestamp()::text), 1, 10)`
    })
    await sql`vacuum (analyze)`
    await sql`checkpoint`
    // The bulk load is on disk before any scenario: the system's own write-back
    // of it would otherwise slow every commit of the first scenarios.
    execFileSync('sync')
    await new Promise(resolve => setTimeout(resolve, 5000))
    const [counts] = await sql<Counts[]>`
      select (select count(*) from families) as families, (select count(*) from users) as users,
             (select count(*) from children) as children, (select count(*) from measurements) as measurements,
             (select count(*) from visits) as visits,
             (select count(*) from measurements where child_id = ${bigChildId}) as "bigChildMeasurements"
    `
    return counts
  } finally {
    await sql.end({ timeout: 5 })
  }
}
