#!/usr/bin/env node
// kafkajs driver of the fault-injection tests (compat_tests/test_faults_node.py). It drives
// millpond's control endpoint over HTTP itself (Node's built-in fetch), to show a JavaScript
// test needs nothing of Python's to make the broker misbehave:
//
//   faults_kafkajs.js produce --bootstrap B --control URL --topic T --partitions P --count N [--rule JSON]...
//       POSTs each rule to URL/v1/faults and prints {"event": "rule", "rule": <the answer>},
//       then an idempotent producer (acks=-1) sends "record-<i>" (i < N) to partition i % P in
//       sends of 100 records, one after the other; prints {"event": "produced", ...} (with the
//       sends and the Produce requests they took) and GET /v1/faults as "faults-after".
//   faults_kafkajs.js rebalance --bootstrap B --control URL --topic T --group G
//       a consumer-group member; once it has joined (GROUP_JOIN), POST
//       URL/v1/groups/G/rebalance, then wait until it joins again. Prints each join, with the
//       group's generation and state from GET /v1/state, and the endpoint's answer.
//   faults_kafkajs.js clock --control URL
//       freezes the clock, advances it an hour, resumes it; prints each answer.
//
// Timeouts are short (a 3 s request timeout). Exits 1, with the error on stderr, when a call
// fails or a wait runs past 60 s. MILLPOND_DRIVER_DEBUG=1 turns kafkajs' log (stderr) to DEBUG.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const TIMEOUT_MS = 60000
const REQUEST_TIMEOUT_MS = 3000
const BATCH = 100
const FLAGS = {
  '--bootstrap': 'bootstrap',
  '--control': 'control',
  '--topic': 'topic',
  '--partitions': 'partitions',
  '--count': 'count',
  '--group': 'group',
}

function parseArgs(argv) {
  const [command, ...rest] = argv
  const args = { command, rules: [], partitions: '1', count: '0' }
  for (let i = 0; i < rest.length; i += 2) {
    if (i + 1 >= rest.length) throw new Error(`no value for ${rest[i]}`)
    if (rest[i] === '--rule') {
      args.rules.push(rest[i + 1])
      continue
    }
    const name = FLAGS[rest[i]]
    if (name === undefined) throw new Error(`unexpected argument ${rest[i]}`)
    args[name] = rest[i + 1]
  }
  args.partitions = Number(args.partitions)
  args.count = Number(args.count)
  if (!args.control) throw new Error('--control is required')
  return args
}

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n')
}

function fail(message) {
  process.stderr.write(`faults_kafkajs: ${message}\n`)
  process.exit(1)
}

// One call to the control endpoint; its JSON answer (null for none). A status other than
// 2xx is an error.
async function call(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : body,
    signal: AbortSignal.timeout(30000),
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text}`)
  return text ? JSON.parse(text) : null
}

const logCreator =
  () =>
  ({ namespace, level, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`[kafkajs ${level}] ${namespace}: ${message} ${JSON.stringify(extra)}\n`)
  }

function kafka(args) {
  return new Kafka({
    clientId: 'millpond-faults-kafkajs',
    brokers: [args.bootstrap],
    logLevel: process.env.MILLPOND_DRIVER_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
    logCreator,
    connectionTimeout: 3000,
    requestTimeout: REQUEST_TIMEOUT_MS,
    retry: { retries: 10, initialRetryTime: 50, maxRetryTime: 500 },
  })
}

async function installRules(args) {
  for (const rule of args.rules) {
    emit({ event: 'rule', rule: await call('POST', `${args.control}/v1/faults`, rule) })
  }
}

async function produce(args) {
  await installRules(args)
  // kafkajs keeps an idempotent producer's order with one request in flight.
  const producer = kafka(args).producer({ idempotent: true, maxInFlightRequests: 1 })
  // Every Produce request kafkajs made, answered or timed out: more than one per send means
  // it retried.
  let requests = 0
  const count = ({ payload }) => {
    if (payload.apiName === 'Produce') requests++
  }
  producer.on(producer.events.REQUEST, count)
  producer.on(producer.events.REQUEST_TIMEOUT, count)
  await producer.connect()
  const started = Date.now()
  let sends = 0
  for (let start = 0; start < args.count; start += BATCH) {
    sends++
    const messages = []
    for (let i = start; i < Math.min(start + BATCH, args.count); i++) {
      messages.push({ partition: i % args.partitions, value: `record-${i}` })
    }
    await producer.send({ topic: args.topic, acks: -1, messages })
  }
  emit({ event: 'produced', count: args.count, elapsed_ms: Date.now() - started, sends, requests })
  await producer.disconnect()
  emit({ event: 'faults-after', rules: await call('GET', `${args.control}/v1/faults`) })
}

async function rebalance(args) {
  const consumer = kafka(args).consumer({
    groupId: args.group,
    sessionTimeout: 6000,
    // The news of a rebalance comes with a heartbeat, which waits for the fetch in flight.
    heartbeatInterval: 300,
    maxWaitTimeInMs: 200,
  })
  let joined = null
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    if (joined) joined(payload.memberId)
  })
  // GROUP_JOIN carries no generation: the broker's state says which one the member joined.
  const report = async memberId => {
    const state = await call('GET', `${args.control}/v1/state`)
    const group = state.groups.find(g => g.group_id === args.group)
    emit({ event: 'joined', member_id: memberId, generation: group.generation, state: group.state })
  }
  consumer.on(consumer.events.CRASH, ({ payload }) => fail(`consumer crashed: ${payload.error}`))
  const nextJoin = () =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no join within ${TIMEOUT_MS} ms`)), TIMEOUT_MS)
      joined = memberId => {
        clearTimeout(timer)
        joined = null
        resolve(memberId)
      }
    })
  const first = nextJoin()
  await consumer.connect()
  await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
  await consumer.run({ eachMessage: async () => {} })
  await report(await first)
  const second = nextJoin()
  const group = encodeURIComponent(args.group)
  emit({ event: 'forced', group: await call('POST', `${args.control}/v1/groups/${group}/rebalance`) })
  await report(await second)
  await consumer.disconnect()
}

async function clock(args) {
  const steps = [
    ['before', 'GET', '/v1/clock'],
    ['freeze', 'POST', '/v1/clock/freeze'],
    ['advance', 'POST', '/v1/clock/advance', '{"ms": 3600000}'],
    ['resume', 'POST', '/v1/clock/resume'],
  ]
  for (const [name, method, path, body] of steps) {
    emit({ event: 'clock', [name]: await call(method, `${args.control}${path}`, body) })
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const commands = { produce, rebalance, clock }
  if (!(args.command in commands)) throw new Error(`unknown command ${args.command}`)
  const timer = setTimeout(() => fail(`still running after ${TIMEOUT_MS} ms`), TIMEOUT_MS)
  await commands[args.command](args)
  clearTimeout(timer)
}

main().catch(error => fail(error.stack || String(error)))
