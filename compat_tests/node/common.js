// What the Node.js drivers of compat_tests/SCENARIOS.md share: the command line (several
// scenarios per process, so one Node start serves them all), the JSON event lines, and the
// records and values every scenario produces.
'use strict'

const crypto = require('crypto')

const TIMEOUT_MS = 60000 // the bound of every waiting loop (per scenario)
const SCENARIOS = ['produce-consume', 'acks', 'large', 'admin', 'errors']
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd']

const FLAGS = {
  '--bootstrap': 'bootstrap',
  '--topic': 'topic',
  '--partitions': 'partitions',
  '--count': 'count',
  '--start-ts': 'startTs',
  '--compression': 'compression',
}

function parseOne(argv) {
  const [scenario, ...rest] = argv
  if (!SCENARIOS.includes(scenario)) throw new Error(`unknown scenario ${scenario}`)
  const args = {
    scenario,
    bootstrap: null,
    topic: null,
    partitions: 1,
    count: 60,
    startTs: 1700000000000,
    compression: 'none',
  }
  for (let i = 0; i < rest.length; i += 2) {
    const name = FLAGS[rest[i]]
    if (name === undefined || i + 1 >= rest.length) throw new Error(`unexpected argument ${rest[i]}`)
    args[name] = rest[i + 1]
  }
  for (const n of ['partitions', 'count', 'startTs']) {
    args[n] = Number(args[n])
    if (!Number.isSafeInteger(args[n])) throw new Error(`${n} must be an integer`)
  }
  if (!CODECS.includes(args.compression)) throw new Error(`unknown compression ${args.compression}`)
  if (!args.bootstrap || !args.topic) throw new Error('--bootstrap and --topic are required')
  // Tags every event of this run: the test module splits one process's output by it.
  args.label = scenario === 'produce-consume' ? `${scenario}/${args.compression}` : scenario
  return args
}

// `SCENARIO FLAGS... [-- SCENARIO FLAGS...]...`: the runs of one process, in order.
function parseRuns(argv) {
  const runs = [[]]
  for (const arg of argv) {
    if (arg === '--') runs.push([])
    else runs[runs.length - 1].push(arg)
  }
  return runs.map(parseOne)
}

function emitter(label) {
  return event => process.stdout.write(JSON.stringify({ scenario: label, ...event }) + '\n')
}

// produce-consume's record i, with headers as [name, value] pairs in order.
function wantRecord(args, i) {
  return {
    key: `key-${i % 7}`,
    value: `value-${i}`,
    headers: [
      ['h1', `v${i}`],
      ['h2', ''],
    ],
    timestamp: args.startTs + i * 1000,
  }
}

function largeValue(size) {
  const value = Buffer.alloc(size)
  for (let j = 0; j < size; j++) value[j] = 97 + (j % 26)
  return value
}

function sha256(buffer) {
  return crypto.createHash('sha256').update(buffer).digest('hex')
}

function text(buffer) {
  return buffer === null || buffer === undefined ? null : Buffer.from(buffer).toString('utf8')
}

// DescribeConfigs' config_source numbers by Kafka's names (ConfigEntry.ConfigSource).
const CONFIG_SOURCES = [
  'UNKNOWN',
  'DYNAMIC_TOPIC_CONFIG',
  'DYNAMIC_BROKER_CONFIG',
  'DYNAMIC_DEFAULT_BROKER_CONFIG',
  'STATIC_BROKER_CONFIG',
  'DEFAULT_CONFIG',
  'DYNAMIC_BROKER_LOGGER_CONFIG',
  'CLIENT_METRICS_CONFIG',
  'GROUP_CONFIG',
]

const ADMIN = {
  startTs: 1700000000000,
  created: { 'retention.ms': '86400000', 'max.message.bytes': '500000' },
  picked: ['retention.ms', 'max.message.bytes', 'cleanup.policy'],
}

const LARGE = { near: 1000000, over: 1100000, maxBytes: 4 << 20 }

// The first value of `probe()` that `done` accepts, or its last one after 10 s of asking.
async function until(probe, done) {
  const deadline = Date.now() + 10000
  for (;;) {
    const value = await probe()
    if (done(value) || Date.now() > deadline) return value
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

// Runs `main(argv)`, bounded in time: exit 0 when it resolved, 1 with the error on stderr.
function run(main) {
  const timer = setTimeout(() => {
    process.stderr.write('driver: still running after its time limit\n')
    process.exit(1)
  }, 200000)
  timer.unref()
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    e => {
      process.stderr.write(`driver: ${e && e.stack ? e.stack : e}\n`)
      process.exit(1)
    }
  )
}

module.exports = {
  ADMIN,
  CONFIG_SOURCES,
  LARGE,
  TIMEOUT_MS,
  emitter,
  largeValue,
  parseRuns,
  run,
  sha256,
  text,
  until,
  wantRecord,
}
