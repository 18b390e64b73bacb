// The Node.js side of the Go port's interoperability test (interop_test.go), using the
// original library on a queue the Go library shares.
//   node interop.js add HOST PORT DB NAME DATA  adds a job; prints its id
//   node interop.js process HOST PORT DB NAME   processes one job; prints "completed ID"
//   node interop.js fail HOST PORT DB NAME      processes one job, which fails; prints "failed ID"
//                                              (or "terminated ID")
//   node interop.js review HOST PORT DB NAME    runs a Queue Master review once; prints
//                                              "reviewed N"
const Queue = require('rethinkdb-job-queue')
const [mode, host, port, db, name, data] = process.argv.slice(2)
const q = new Queue({ host, port: Number(port), db }, { name, masterInterval: false, changeFeed: false, databaseInitDelay: 0 })
q.on('error', (err) => { console.error('queue error: ' + err.message) })
function finish (code) { q.stop().then(() => process.exit(code)).catch(() => process.exit(code)) }
q.ready().then(() => {
  if (mode === 'add') {
    const job = q.createJob({ from: 'node', data }).setName('node-job').setPriority('high')
    return q.addJob(job).then((saved) => { console.log(saved[0].id); finish(0) })
  }
  if (mode === 'review') {
    return q.review().then((res) => { console.log('reviewed ' + res.reviewed); finish(0) })
  }
  if (mode === 'fail') {
    q.on('failed', (queueId, jobId) => { console.log('failed ' + jobId); finish(0) })
    q.on('terminated', (queueId, jobId) => { console.log('terminated ' + jobId); finish(0) })
    return q.process((job, next) => { next(new Error('node failed')) })
  }
  q.on('completed', (queueId, jobId) => { console.log('completed ' + jobId); finish(0) })
  return q.process((job, next) => { next(null, 'node did ' + JSON.stringify(job.data)) })
}).catch((err) => { console.error(err); process.exit(1) })
setTimeout(() => { console.error('timed out'); process.exit(2) }, 30000)
