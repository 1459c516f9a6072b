import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import createError from '@fastify/error'

const RateLimited = createError('RATE_LIMITED', 'Too many requests; retry in %s', 429)

/**
 * Security headers on every response, CORS only for the configured origins, and
 * the rate limiter that routes opt into (`config.rateLimit`).
 */
export default fp(async function security (fastify) {
  const { config } = fastify

  await fastify.register(helmet, {
    global: true,
    // The service speaks plain HTTP behind its TLS proxy; the docs page must load over either.
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } }
  })

  await fastify.register(cors, {
    origin: config.corsOrigins.length > 0 ? config.corsOrigins : false,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
    exposedHeaders: ['X-Request-Id', 'Location', 'Retry-After'],
    maxAge: 600
  })

  await fastify.register(rateLimit, {
    global: false,
    max: config.authRateLimitMax,
    timeWindow: config.authRateLimitWindow * 1000,
    errorResponseBuilder: (_request, context) => new RateLimited(context.after)
  })
}, { name: 'security', dependencies: ['config'] })
