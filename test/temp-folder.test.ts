import t from 'tap'
import { execFile } from 'node:child_process'
import path from 'node:path'

const RUNNER = path.join(__dirname, '..', 'scripts', 'test.js')
const FIXTURES = path.join(__dirname, 'fixtures', 'temp-folder')

function run (file: string): Promise<{ code: number, stdout: string }> {
  return new Promise(resolve => {
    execFile(process.execPath, [RUNNER, file], { cwd: FIXTURES }, (error, stdout) => {
      resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout })
    })
  })
}

// `npm test` runs tap with a temp folder of the run's own and fails when the
// tests leave anything in it; this whole suite passes that check.
t.test('the test command fails a run that leaves files in its temp folder', async t => {
  const left = await run('leaves.test.js')
  t.not(left.code, 0, 'a run that leaves a file fails')
  t.match(left.stdout, /^temp folder: 1 left behind: left-behind$/m, 'and names what it left')

  const clean = await run('clean.test.js')
  t.equal(clean.code, 0, 'a run that cleans up passes')
  t.match(clean.stdout, /^temp folder: clean$/m)
})
