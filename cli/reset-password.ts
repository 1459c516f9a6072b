import { Password } from '../lib/account-schemas'
import { hashPassword } from '../io/passwords'
import { StrictObject } from '../lib/schemas'
import { revokeUserSessions } from '../sql/sessions'
import { findCredentials, setPasswordHash } from '../sql/users'
import { checkAccount, COMMAND_LINE } from './account'
import { option, withDatabase, type Command } from './command'
import { readPassword } from './input'

/** reset-password: a user's new password, and every session of theirs signed out. */
export const resetPassword: Command = {
  options: { email: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
  async run (values, config) {
    const email = option(values, 'email')
    const { password } = checkAccount(StrictObject({ password: Password }), { password: await readPassword(values['password-stdin'] === true) })
    return withDatabase(config, async sql => {
      const account = await findCredentials(sql, email)
      if (account === undefined) throw new Error(`no user has the e-mail ${email}`)
      const passwordHash = await hashPassword(password, config.bcryptCost, COMMAND_LINE)
      await sql.begin(async tx => {
        await setPasswordHash(tx, account.id, passwordHash)
        await revokeUserSessions(tx, account.id)
      })
      return `reset the password of ${account.email} and signed out every session of theirs`
    })
  }
}
