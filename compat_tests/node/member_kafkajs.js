#!/usr/bin/env node
// kafkajs as one member of the `group` scenario of compat_tests/SCENARIOS.md:
//   member_kafkajs.js group-member --bootstrap B --topic T --group G [--session-timeout-ms N]
// kafkajs 2.2.4 has one assigner (round-robin, its default; --assignor roundrobin is
// accepted) and no static membership (its JoinGroup never carries a group instance id), so
// --instance-id is refused.
//
// The assignment comes from the GROUP_JOIN instrumentation event, which kafkajs emits after
// every JoinGroup + SyncGroup with the member's whole assignment; it is printed when it
// differs from the last one printed. Records are processed in eachBatch (one partition's
// fetched records at a time, autoCommit off): after a batch, its next offset is resolved and
// committed through commitOffsetsIfNecessary with explicit offsets, which sends the
// OffsetCommit at once and rejects when the broker refuses it. (consumer.commitOffsets is
// no use here: it silently skips the commit once the consumer is stopping.)
// MILLPOND_DRIVER_DEBUG=1 turns kafkajs' log (on stderr) to DEBUG.
'use strict'

const readline = require('readline')
const { Kafka, logLevel } = require('kafkajs')

const FLAGS = {
  '--bootstrap': 'bootstrap',
  '--topic': 'topic',
  '--group': 'group',
  '--assignor': 'assignor',
  '--instance-id': 'instanceId',
  '--session-timeout-ms': 'sessionTimeoutMs',
}

function parseArgs(argv) {
  const [scenario, ...rest] = argv
  if (scenario !== 'group-member') throw new Error(`unknown scenario ${scenario}`)
  const args = { assignor: null, instanceId: null, sessionTimeoutMs: '6000' }
  for (let i = 0; i < rest.length; i += 2) {
    const name = FLAGS[rest[i]]
    if (name === undefined || i + 1 >= rest.length) throw new Error(`unexpected argument ${rest[i]}`)
    args[name] = rest[i + 1]
  }
  if (!args.bootstrap || !args.topic || !args.group) {
    throw new Error('--bootstrap, --topic and --group are required')
  }
  if (args.assignor !== null && args.assignor !== 'roundrobin') {
    throw new Error(`kafkajs has no ${args.assignor} assigner, only roundrobin`)
  }
  if (args.instanceId !== null) throw new Error('kafkajs 2.2.4 has no static membership')
  args.sessionTimeoutMs = Number(args.sessionTimeoutMs)
  if (!Number.isSafeInteger(args.sessionTimeoutMs)) throw new Error('bad --session-timeout-ms')
  return args
}

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n')
}

function fail(message) {
  process.stderr.write(`member_kafkajs: ${message}\n`)
  process.exit(1)
}

const LEVEL = process.env.MILLPOND_DRIVER_DEBUG ? logLevel.DEBUG : logLevel.WARN
// kafkajs' default log creator prints on stdout, which belongs to the events.
const logCreator =
  () =>
  ({ namespace, level, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`[kafkajs ${level}] ${namespace}: ${message} ${JSON.stringify(extra)}\n`)
  }

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const kafka = new Kafka({
    clientId: 'millpond-compat-kafkajs-member',
    brokers: [args.bootstrap],
    logLevel: LEVEL,
    logCreator,
    connectionTimeout: 3000,
  })
  const consumer = kafka.consumer({
    groupId: args.group,
    sessionTimeout: args.sessionTimeoutMs,
    heartbeatInterval: Math.max(Math.floor(args.sessionTimeoutMs / 4), 100),
    // Heartbeats (and so the news of a rebalance) wait for the fetch in flight: keep it short.
    maxWaitTimeInMs: 200,
    // A crash ends the member (CRASH below) instead of kafkajs restarting it unseen.
    retry: { retries: 5, restartOnFailure: async () => false },
  })

  let printed = null
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const partitions = [...(payload.memberAssignment[args.topic] || [])].sort((a, b) => a - b)
    const key = JSON.stringify(partitions)
    if (key !== printed) {
      printed = key
      emit({ event: 'assigned', partitions })
    }
  })
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    fail(`consumer crashed: ${payload.error && payload.error.stack}`)
  })

  await consumer.connect()
  await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary }) => {
      if (batch.messages.length === 0) return
      for (const message of batch.messages) {
        emit({
          event: 'record',
          partition: batch.partition,
          offset: Number(message.offset),
          value: message.value === null ? null : message.value.toString('utf8'),
        })
        resolveOffset(message.offset)
      }
      const next = String(Number(batch.messages[batch.messages.length - 1].offset) + 1)
      try {
        await commitOffsetsIfNecessary({
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
        })
      } catch (error) {
        fail(`commit of ${batch.topic}/${batch.partition} at ${next} failed: ${error.stack}`)
      }
      emit({ event: 'committed', partition: batch.partition, offset: Number(next) })
    },
  })

  // `close` (or the end of stdin: the harness is gone): disconnect() waits for the batch in
  // hand (committed above), then leaves the group.
  const lines = readline.createInterface({ input: process.stdin })
  for await (const line of lines) {
    if (line.trim() === 'close') break
  }
  await consumer.disconnect()
  emit({ event: 'closed' })
  process.exit(0)
}

main().catch(error => fail(error.stack || String(error)))
