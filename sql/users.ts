import type { Db } from '../db/client'

import type { Role } from '../lib/roles'

export interface User {
  id: number
  email: string
  name: string
  role: Role
  createdAt: Date
}

export interface Credentials extends User {
  /** Null for an account made by signing in with the identity provider, until a password is set. */
  passwordHash: string | null
  disabled: boolean
}

export async function anyUserExists (db: Db): Promise<boolean> {
  const [row] = await db`select exists (select 1 from users) as found`
  return row.found
}

export async function emailTaken (db: Db, email: string, exceptUserId: number | null = null): Promise<boolean> {
  const [row] = await db`
    select exists (
      select 1 from users
      where lower(email) = lower(${email}) and id is distinct from ${exceptUserId}
    ) as found
  `
  return row.found
}

export async function insertUser (db: Db, user: { email: string, name: string, passwordHash: string | null, role: Role }): Promise<User> {
  const [row] = await db<User[]>`
    insert into users (email, name, password_hash, role)
    values (${user.email}, ${user.name}, ${user.passwordHash}, ${user.role})
    returning id, email, name, role, created_at as "createdAt"
  `
  return row
}

export async function findCredentials (db: Db, email: string): Promise<Credentials | undefined> {
  const [row] = await db<Credentials[]>`
    select id, email, name, role, created_at as "createdAt", password_hash as "passwordHash", disabled
    from users
    where lower(email) = lower(${email})
  `
  return row
}

export async function findCredentialsById (db: Db, id: number): Promise<Credentials | undefined> {
  const [row] = await db<Credentials[]>`
    select id, email, name, role, created_at as "createdAt", password_hash as "passwordHash", disabled
    from users
    where id = ${id}
  `
  return row
}

export async function findUser (db: Db, id: number): Promise<User | undefined> {
  const [row] = await db<User[]>`
    select id, email, name, role, created_at as "createdAt" from users where id = ${id}
  `
  return row
}

export async function updateProfile (db: Db, id: number, changes: { name?: string, email?: string }): Promise<User> {
  const [row] = await db<User[]>`
    update users set
      name = coalesce(${changes.name ?? null}, name),
      email = coalesce(${changes.email ?? null}, email),
      updated_at = now()
    where id = ${id}
    returning id, email, name, role, created_at as "createdAt"
  `
  return row
}

export async function setPasswordHash (db: Db, id: number, passwordHash: string): Promise<void> {
  await db`update users set password_hash = ${passwordHash}, updated_at = now() where id = ${id}`
}

export async function recordLogin (db: Db, id: number): Promise<void> {
  await db`update users set last_login_at = now() where id = ${id}`
}
