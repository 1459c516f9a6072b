import type autocannon from 'autocannon'
import type { Load } from '../load'
import { settings } from '../settings'
import type { Peer } from './peers'
import { listPath } from './seed'

/** Every child in turn, each connection starting elsewhere, as the bench's own loads do. */
function everyChild (ids: number[], connection: number, build: (id: number) => autocannon.Request): autocannon.Request[] {
  const start = (connection * 7) % ids.length
  return ids.map((_, index) => build(ids[(start + index) % ids.length]))
}

/** The 100-row measurements list of each child in turn, over 32 connections. */
export function listLoad (url: string, token: string, ids: number[]): Load {
  return {
    url,
    connections: settings.connections,
    requests: connection => everyChild(ids, connection, id => ({ method: 'GET', path: listPath(id), headers: { authorization: `Bearer ${token}` } }))
  }
}

/** A new measurement, dated today, for each child in turn, over 32 connections. */
export function createLoad (peer: Peer, url: string, token: string, ids: number[]): Load {
  const body = JSON.stringify(peer.measurementBody({ date: new Date().toISOString().slice(0, 10), heightCm: 121.4, weightKg: 23.35, headCm: null }))
  return {
    url,
    connections: settings.connections,
    requests: connection => everyChild(ids, connection, id => ({
      method: 'POST',
      path: `/api/children/${id}/measurements`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body
    }))
  }
}
