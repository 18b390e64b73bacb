// The Node.js original's side of rjqbench: the same measurements on rethinkdb-job-queue
// 3.1.7, printed as one JSON object.
//   node bench.js process HOST PORT DB CONCURRENCY N  → {"jobsPerSec": …}
//   node bench.js add HOST PORT DB N                  → {"jobsPerSec": …}
//   node bench.js latency HOST PORT DB N              → {"millis": [… add → start …]}
const Queue = require('rethinkdb-job-queue')
const [mode, host, port, db, a, b] = process.argv.slice(2)
const concurrency = mode === 'process' ? Number(a) : 1
const q = new Queue({ host, port: Number(port), db }, {
  name: 'rjqJobList', masterInterval: false, changeFeed: mode === 'latency', databaseInitDelay: 0, concurrency
})
q.on('error', (err) => { console.error('queue error: ' + err.message) })
function done (out) {
  console.log(JSON.stringify(out))
  q.stop().then(() => process.exit(0)).catch(() => process.exit(0))
}
function jobs (n) {
  const out = []
  for (let i = 0; i < n; i++) out.push(q.createJob({ n: i }))
  return out
}
q.ready().then(() => {
  if (mode === 'add') {
    const n = Number(a)
    const list = jobs(n)
    const t0 = Date.now()
    return q.addJob(list).then(() => done({ jobsPerSec: n / ((Date.now() - t0) / 1000) }))
  }
  if (mode === 'process') {
    const n = Number(b)
    return q.addJob(jobs(n)).then(() => {
      let completed = 0
      console.log('start') // rjqbench measures the server's CPU from here
      const t0 = Date.now()
      q.on('completed', () => {
        if (++completed === n) done({ jobsPerSec: n / ((Date.now() - t0) / 1000) })
      })
      q.process((job, next) => { next(null, null) })
    })
  }
  const n = Number(a)
  const millis = []
  let t0 = 0
  let started = null
  q.process((job, next) => { if (started) started(); next(null, null) })
  function one (i) {
    if (i === n) return done({ millis })
    return new Promise((resolve) => {
      started = () => { millis.push(Date.now() - t0); resolve() }
      t0 = Date.now()
      q.addJob(q.createJob(null))
    }).then(() => new Promise((resolve) => setTimeout(resolve, 20))).then(() => one(i + 1))
  }
  return one(0)
}).catch((err) => { console.error(err); process.exit(1) })
