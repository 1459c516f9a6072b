import { stderrPriority } from './io/log-destination'
import { UsageError } from './cli/command'
import { BackupTimeout } from './db/backup/bounds'
import { main } from './cli/index'

// The command line's entry (npm run cli, node dist/cli.js); its commands are in cli/.
// A failure is one line on stderr and a non-zero exit: 2 for a usage error,
// 3 for a backup that ran out of time, 1 for any other.
main(process.argv.slice(2)).then(() => process.exit(), error => {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`${stderrPriority(3)}${message.split('\n')[0]}\n`)
  process.exit(error instanceof UsageError ? 2 : error instanceof BackupTimeout ? 3 : 1)
})
