import Ajv, { type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { RouteOptions } from 'fastify'
import type { App } from '../app'

/** A route as the app registered it: method and OpenAPI-style path. */
export interface RegisteredRoute {
  method: string
  path: string
  hidden: boolean
  /** The route's schema as declared: its request parts and its answers. */
  schema: Record<string, unknown> | undefined
}

export function openApiPath (url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

/**
 * Watches an app: the routes it registers, and every response it sends,
 * checked against the OpenAPI document's schema for that route and status,
 * for the security headers, and for stack traces in error bodies.
 */
export class ResponseChecker {
  readonly routes: RegisteredRoute[] = []
  readonly mismatches: string[] = []
  private ajv: Ajv | null = null
  private doc: any = null
  private readonly validators = new Map<string, ValidateFunction>()

  attach (app: App): void {
    app.addHook('onRoute', (route: RouteOptions) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method]
      for (const method of methods) {
        const schema = route.schema as Record<string, unknown> | undefined
        this.routes.push({ method, path: openApiPath(route.url), hidden: schema?.hide === true, schema })
      }
    })
    app.addHook('onSend', async (request, reply, payload) => {
      const url = request.routeOptions.url
      const where = `${request.method} ${url ?? request.url}`
      for (const header of ['x-content-type-options', 'x-frame-options', 'x-request-id', 'content-security-policy']) {
        if (reply.getHeader(header) === undefined) this.mismatches.push(`${where}: no ${header} header`)
      }
      if (reply.statusCode >= 400 && typeof payload === 'string' && /\n\s+at .+:\d+:\d+/.test(payload)) {
        this.mismatches.push(`${where}: a stack trace in an error body`)
      }
      if (url?.startsWith('/api/test/') === true) return payload
      this.check(app, request.method, url, reply.statusCode, String(reply.getHeader('content-type') ?? ''), payload)
      return payload
    })
  }

  private validator (pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer)
    if (validate === undefined) {
      validate = (this.ajv as Ajv).compile({ $ref: `openapi.json#${pointer}` })
      this.validators.set(pointer, validate)
    }
    return validate
  }

  check (app: App, method: string, url: string | undefined, status: number, contentType: string, payload: unknown): void {
    if (this.doc === null) {
      this.doc = app.swagger()
      this.ajv = new Ajv({ strict: false, allErrors: true })
      addFormats(this.ajv)
      this.ajv.addSchema(this.doc, 'openapi.json')
    }
    const where = `${method} ${url ?? '(no route)'} ${status}`
    let pointer: string
    if (url === undefined) {
      pointer = '/components/schemas/Error'
    } else {
      const path = openApiPath(url)
      const operation = this.doc.paths[path]?.[method.toLowerCase()]
      if (operation === undefined) {
        if (method !== 'HEAD' && method !== 'OPTIONS' && !url.includes('*') && !url.startsWith('/api/docs')) {
          this.mismatches.push(`${where}: the route is not in the document`)
        }
        return
      }
      if (operation.responses[status] === undefined) {
        this.mismatches.push(`${where}: the status is not documented`)
        return
      }
      const media = contentType.split(';')[0].trim()
      if (status === 204 || media === '') return
      const content = operation.responses[status].content
      if (content?.[media] === undefined) {
        this.mismatches.push(`${where}: the content type ${media} is not documented`)
        return
      }
      const escaped = path.replace(/~/g, '~0').replace(/\//g, '~1')
      pointer = `/paths/${escaped}/${method.toLowerCase()}/responses/${status}/content/${media.replace(/\//g, '~1')}/schema`
    }
    if (!contentType.includes('json') || typeof payload !== 'string') return
    const validate = this.validator(pointer)
    if (!validate(JSON.parse(payload))) {
      this.mismatches.push(`${where}: ${this.ajv?.errorsText(validate.errors)}`)
    }
  }
}
