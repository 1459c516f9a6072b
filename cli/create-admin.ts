import { Email, Password, UserName } from '../lib/account-schemas'
import { hashPassword } from '../io/passwords'
import { StrictObject } from '../lib/schemas'
import { emailTaken, insertUser } from '../sql/users'
import { checkAccount, COMMAND_LINE } from './account'
import { option, withDatabase, type Command } from './command'
import { readPassword } from './input'

/** create-admin: an administrator account. */
export const createAdmin: Command = {
  options: { email: { type: 'string' }, name: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
  async run (values, config) {
    const account = checkAccount(StrictObject({ email: Email, name: UserName, password: Password }), {
      email: option(values, 'email'),
      name: option(values, 'name'),
      password: await readPassword(values['password-stdin'] === true)
    })
    return withDatabase(config, async sql => {
      const user = await sql.begin(async tx => {
        if (await emailTaken(tx, account.email)) throw new Error(`a user with the e-mail ${account.email} already exists`)
        const passwordHash = await hashPassword(account.password, config.bcryptCost, COMMAND_LINE)
        return insertUser(tx, { email: account.email, name: account.name, passwordHash, role: 'admin' })
      })
      return `created the administrator ${user.email} (id ${user.id})`
    })
  }
}
