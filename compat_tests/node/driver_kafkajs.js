#!/usr/bin/env node
// kafkajs driver of millpond's client scenarios (compat_tests/SCENARIOS.md): prints one JSON
// line per event on stdout and exits 0 when the scenario ran to its end; pass or fail is the
// Python harness's call. MILLPOND_DRIVER_DEBUG=1 turns kafkajs' log (always on stderr) to DEBUG.
//
// Producing uses kafkajs' public producer with its default partitioner (Java-compatible
// murmur2), wrapped only to observe which partition each record went to. Offsets by time
// and the partitions' end offsets come from the public admin client (ListOffsets).
//
// Consuming without a consumer group: kafkajs' only public consumer always joins a group
// (FindCoordinator, JoinGroup, SyncGroup, OffsetFetch), and it has no assign(). So the driver
// reads by partition with kafkajs' own Cluster and Broker classes, the code that consumer's
// fetch loop runs underneath: Metadata to find each partition's leader, then Broker.fetch()
// (Fetch v11 against a Kafka 4.x-like broker) from an explicit offset per partition, decoding
// the record batches with kafkajs' decoders. Like the consumer, it drops the records of the
// first batch that precede the fetch offset.
'use strict'

const { Kafka, Partitioners, CompressionTypes, logLevel } = require('kafkajs')
const Cluster = require('kafkajs/src/cluster')
const { createLogger } = require('kafkajs/src/loggers')
const defaultSocketFactory = require('kafkajs/src/network/socketFactory')

const TIMEOUT_MS = 60000

function parseArgs(argv) {
  const [scenario, ...rest] = argv
  const args = {
    scenario,
    bootstrap: null,
    topic: null,
    partitions: 1,
    count: 60,
    startTs: 1700000000000,
    compression: 'none',
  }
  const names = {
    '--bootstrap': 'bootstrap',
    '--topic': 'topic',
    '--partitions': 'partitions',
    '--count': 'count',
    '--start-ts': 'startTs',
    '--compression': 'compression',
  }
  for (let i = 0; i < rest.length; i += 2) {
    const name = names[rest[i]]
    if (name === undefined || i + 1 >= rest.length) {
      throw new Error(`unexpected argument ${rest[i]}`)
    }
    args[name] = rest[i + 1]
  }
  for (const n of ['partitions', 'count', 'startTs']) {
    args[n] = Number(args[n])
    if (!Number.isSafeInteger(args[n])) throw new Error(`--${n} must be an integer`)
  }
  if (scenario !== 'produce-consume') throw new Error(`unknown scenario ${scenario}`)
  if (!args.bootstrap || !args.topic) throw new Error('--bootstrap and --topic are required')
  return args
}

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n')
}

const LEVEL_NAMES = { [logLevel.ERROR]: 'ERROR', [logLevel.WARN]: 'WARN', [logLevel.INFO]: 'INFO', [logLevel.DEBUG]: 'DEBUG' }

// kafkajs' default log creator prints on stdout, which belongs to the events.
const stderrLogCreator = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`[kafkajs ${LEVEL_NAMES[level] || level}] ${namespace}: ${message} ${JSON.stringify(extra)}\n`)
}

const LOG_LEVEL = process.env.MILLPOND_DRIVER_DEBUG ? logLevel.DEBUG : logLevel.WARN

function want(args, i) {
  return {
    key: `key-${i % 7}`,
    value: `value-${i}`,
    headers: { h1: `v${i}`, h2: '' }, // kafkajs headers: an object, written in key order
    timestamp: String(args.startTs + i * 1000),
  }
}

const COMPRESSION = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }

async function produce(kafka, args) {
  const compression = COMPRESSION[args.compression]
  if (compression === undefined) {
    throw new Error(`compression ${args.compression} is not built into kafkajs (none, gzip)`)
  }
  const partitionOf = new Map() // i -> partition the default partitioner chose
  const createPartitioner = options => {
    const partitioner = Partitioners.DefaultPartitioner(options)
    return call => {
      const partition = partitioner(call)
      partitionOf.set(Number(String(call.message.value).slice('value-'.length)), partition)
      return partition
    }
  }
  const producer = kafka.producer({ createPartitioner })
  await producer.connect()
  try {
    const messages = []
    for (let i = 0; i < args.count; i++) messages.push(want(args, i))
    // One send: kafkajs groups the messages by partition, in order, one batch per partition,
    // and reports each partition's base offset.
    const results = await producer.send({ topic: args.topic, compression, acks: -1, messages })
    const base = new Map()
    for (const r of results) {
      if (r.errorCode !== 0) throw new Error(`produce to partition ${r.partition}: error ${r.errorCode}`)
      base.set(r.partition, BigInt(r.baseOffset))
    }
    const rank = new Map()
    for (let i = 0; i < args.count; i++) {
      const p = partitionOf.get(i)
      if (p === undefined || !base.has(p)) throw new Error(`no delivery report for record ${i}`)
      const n = rank.get(p) || 0n
      rank.set(p, n + 1n)
      emit({ event: 'produced', i, partition: p, offset: Number(base.get(p) + n) })
    }
  } finally {
    await producer.disconnect()
  }
}

function str(b) {
  return b === null || b === undefined ? null : Buffer.from(b).toString('utf8')
}

// Reads every partition of `ranges` (partition -> [start, end)) and prints its records.
async function consume(args, rootLogger, phase, ranges, deadline) {
  const pending = new Map([...ranges].filter(([, [start, end]]) => start < end).map(([p, [start]]) => [p, start]))
  if (pending.size === 0) return
  const ends = new Map([...ranges].map(([p, [, end]]) => [p, end]))
  const cluster = new Cluster({
    logger: rootLogger,
    socketFactory: defaultSocketFactory(),
    brokers: [args.bootstrap],
    enforceRequestTimeout: true,
    retry: { retries: 5 },
    clientId: 'millpond-compat-kafkajs',
    connectionTimeout: 3000,
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
  })
  await cluster.connect()
  try {
    await cluster.addTargetTopic(args.topic)
    while (pending.size > 0) {
      if (Date.now() > deadline) {
        throw new Error(`${phase}: partitions ${[...pending.keys()]} not read to their end before the timeout`)
      }
      const leaders = cluster.findLeaderForPartitions(args.topic, [...pending.keys()])
      for (const [nodeId, partitions] of Object.entries(leaders)) {
        const broker = await cluster.findBroker({ nodeId })
        let responses
        try {
          ;({ responses } = await broker.fetch({
            maxWaitTime: 500,
            minBytes: 1,
            maxBytes: 10485760,
            isolationLevel: 0, // read_uncommitted
            topics: [
              {
                topic: args.topic,
                partitions: partitions.map(p => ({
                  partition: p,
                  fetchOffset: pending.get(p).toString(),
                  maxBytes: 1048576,
                })),
              },
            ],
          }))
        } catch (e) {
          process.stderr.write(`driver: ${phase}: fetch from node ${nodeId}: ${e.name}: ${e.message}\n`)
          await cluster.refreshMetadata()
          await new Promise(resolve => setTimeout(resolve, 200))
          continue
        }
        for (const { partitions: parts } of responses) {
          for (const { partition, messages } of parts) {
            const from = pending.get(partition)
            if (from === undefined) continue
            let next = from
            for (const m of messages) {
              const offset = BigInt(m.offset)
              if (offset < next || m.isControlRecord) continue // the batch's earlier records
              emit({
                event: 'record',
                phase,
                partition,
                offset: Number(offset),
                key: str(m.key),
                value: str(m.value),
                headers: Object.entries(m.headers).flatMap(([k, v]) =>
                  (Array.isArray(v) ? v : [v]).map(one => [k, str(one)])
                ),
                timestamp: Number(m.timestamp),
              })
              next = offset + 1n
            }
            if (next >= ends.get(partition)) pending.delete(partition)
            else pending.set(partition, next)
          }
        }
      }
    }
  } finally {
    await cluster.disconnect()
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const deadline = Date.now() + TIMEOUT_MS
  const kafka = new Kafka({
    clientId: 'millpond-compat-kafkajs',
    brokers: [args.bootstrap],
    logLevel: LOG_LEVEL,
    logCreator: stderrLogCreator,
    connectionTimeout: 3000,
    retry: { retries: 5 },
  })
  const rootLogger = createLogger({ level: LOG_LEVEL, logCreator: stderrLogCreator })

  await produce(kafka, args)

  const admin = kafka.admin()
  await admin.connect()
  let offsets, byTime
  const threshold = args.startTs + Math.floor(args.count / 2) * 1000
  try {
    offsets = await admin.fetchTopicOffsets(args.topic) // [{partition, low, high}]
    // ListOffsets by timestamp; kafkajs answers the end offset where no record is that late.
    byTime = await admin.fetchTopicOffsetsByTimestamp(args.topic, threshold)
  } finally {
    await admin.disconnect()
  }
  const high = new Map(offsets.map(o => [o.partition, BigInt(o.high)]))
  const beginning = new Map(offsets.map(o => [o.partition, [BigInt(o.low), BigInt(o.high)]]))
  await consume(args, rootLogger, 'beginning', beginning, deadline)

  const fromTs = new Map()
  for (const { partition, offset } of byTime) {
    process.stderr.write(
      `driver: partition ${partition}: offset for timestamp ${threshold} is ${offset}, end ${high.get(partition)}\n`
    )
    const start = BigInt(offset)
    if (start >= 0n) fromTs.set(partition, [start, high.get(partition)])
  }
  await consume(args, rootLogger, 'from_timestamp', fromTs, deadline)
}

const timer = setTimeout(() => {
  process.stderr.write(`driver: still running after ${TIMEOUT_MS + 10000} ms\n`)
  process.exit(1)
}, TIMEOUT_MS + 10000)
timer.unref()

main().then(
  () => process.exit(0),
  e => {
    process.stderr.write(`driver: ${e && e.stack ? e.stack : e}\n`)
    process.exit(1)
  }
)
