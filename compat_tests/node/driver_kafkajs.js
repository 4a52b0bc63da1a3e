#!/usr/bin/env node
// kafkajs driver of millpond's client scenarios (compat_tests/SCENARIOS.md): prints one JSON
// line per event on stdout (tagged with its run's "scenario") and exits 0 when every run
// ended; pass or fail is the Python harness's call. Several runs share one process:
//   driver_kafkajs.js SCENARIO FLAGS... [-- SCENARIO FLAGS...]...
// MILLPOND_DRIVER_DEBUG=1 turns kafkajs' log (always on stderr) to DEBUG.
//
// Codecs: kafkajs builds in gzip only; snappy, lz4 and zstd are plugged into its
// CompressionCodecs registry (kafkajs-snappy, and small adapters over lz4-napi's LZ4 frame
// format and zstd-napi), which both its producer and its fetch decoder use.
//
// Producing uses kafkajs' public producer with its default partitioner (Java-compatible
// murmur2), wrapped only to observe which partition each record went to. Offsets by time,
// the partitions' end offsets and every admin step come from the public admin client.
//
// Consuming without a consumer group: kafkajs' only public consumer always joins a group
// (FindCoordinator, JoinGroup, SyncGroup, OffsetFetch), and it has no assign(). So the driver
// reads by partition with kafkajs' own Cluster and Broker classes, the code that consumer's
// fetch loop runs underneath: Metadata to find each partition's leader, then Broker.fetch()
// from an explicit offset per partition, decoding the record batches with kafkajs' decoders.
// Like the consumer, it drops the records of the first batch that precede the fetch offset.
'use strict'

const {
  Kafka,
  Partitioners,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  logLevel,
} = require('kafkajs')
const Broker = require('kafkajs/src/broker')
const Cluster = require('kafkajs/src/cluster')
const { createLogger } = require('kafkajs/src/loggers')
const defaultSocketFactory = require('kafkajs/src/network/socketFactory')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4-napi')
const zstd = require('zstd-napi')
const common = require('./common')

const { ADMIN, CONFIG_SOURCES, LARGE, TIMEOUT_MS } = common

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
// Kafka's LZ4 is the LZ4 frame format with independent blocks (lz4_flex's default frame).
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async encoder => lz4.compressFrame(encoder.buffer),
  decompress: async buffer => lz4.decompressFrame(buffer),
})
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async encoder => zstd.compress(encoder.buffer),
  decompress: async buffer => zstd.decompress(buffer),
})

const COMPRESSION = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

const LEVEL_NAMES = {
  [logLevel.ERROR]: 'ERROR',
  [logLevel.WARN]: 'WARN',
  [logLevel.INFO]: 'INFO',
  [logLevel.DEBUG]: 'DEBUG',
}

// kafkajs' default log creator prints on stdout, which belongs to the events.
const stderrLogCreator =
  () =>
  ({ namespace, level, log }) => {
    const { message, ...extra } = log
    process.stderr.write(
      `[kafkajs ${LEVEL_NAMES[level] || level}] ${namespace}: ${message} ${JSON.stringify(extra)}\n`
    )
  }

// ERROR, not WARN: the expected failures (errors, large) would log their retries as warnings.
const LOG_LEVEL = process.env.MILLPOND_DRIVER_DEBUG ? logLevel.DEBUG : logLevel.ERROR
const rootLogger = createLogger({ level: LOG_LEVEL, logCreator: stderrLogCreator })

function client(args, retry = { retries: 5 }) {
  return new Kafka({
    clientId: 'millpond-compat-kafkajs',
    brokers: [args.bootstrap],
    logLevel: LOG_LEVEL,
    logCreator: stderrLogCreator,
    connectionTimeout: 3000,
    retry,
  })
}

// The Kafka error code a kafkajs error carries: its own (protocol errors have a numeric
// code and a type), or that of the error it wraps (retries exhausted, several errors in one);
// null when none of them came from a broker's answer.
function kafkaCode(error) {
  const seen = new Set()
  const queue = [error]
  while (queue.length > 0) {
    const e = queue.shift()
    if (!e || typeof e !== 'object' || seen.has(e)) continue
    seen.add(e)
    if (Number.isInteger(e.code) && typeof e.type === 'string') return e.code
    queue.push(e.cause, ...(Array.isArray(e.errors) ? e.errors : []))
  }
  return null
}

function errorLine(emit, step, e) {
  const inner = (Array.isArray(e.errors) ? e.errors : []).map(one => `; ${one.name}: ${one.message}`)
  emit({ event: 'error', step, code: kafkaCode(e), message: `${e.name}: ${e.message}${inner.join('')}` })
}

async function withConnected(thing, body) {
  await thing.connect()
  try {
    return await body(thing)
  } finally {
    await thing.disconnect()
  }
}

// Reads `starts` (partition -> first offset) of args.topic, handing each record to `onRecord`
// (partition, kafkajs message), until every partition of `ends` (partition -> end offset)
// reached its end and, with `total`, that many records were read; throws at the deadline.
async function consume(args, phase, { starts, ends = new Map(), total = 0 }, deadline, onRecord) {
  const pending = new Map([...starts].filter(([p, start]) => !ends.has(p) || start < ends.get(p)))
  let read = 0
  const finished = () =>
    read >= total && [...pending.keys()].every(p => !ends.has(p) || pending.get(p) >= ends.get(p))
  if (finished()) return
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
    while (!finished()) {
      if (Date.now() > deadline) {
        throw new Error(`${phase}: read ${read} records, offsets ${JSON.stringify([...pending])}: timed out`)
      }
      const leaders = cluster.findLeaderForPartitions(args.topic, [...pending.keys()])
      for (const [nodeId, partitions] of Object.entries(leaders)) {
        const broker = await cluster.findBroker({ nodeId })
        let responses
        try {
          ;({ responses } = await broker.fetch({
            maxWaitTime: 500,
            minBytes: 1,
            maxBytes: 4 * LARGE.maxBytes,
            isolationLevel: 0, // read_uncommitted
            topics: [
              {
                topic: args.topic,
                partitions: partitions.map(p => ({
                  partition: p,
                  fetchOffset: pending.get(p).toString(),
                  maxBytes: LARGE.maxBytes,
                })),
              },
            ],
          }))
        } catch (e) {
          process.stderr.write(`driver: ${phase}: fetch from node ${nodeId}: ${e.name}: ${e.message}\n`)
          await cluster.refreshMetadata()
          continue
        }
        for (const { partitions: parts } of responses) {
          for (const { partition, messages } of parts) {
            let next = pending.get(partition)
            if (next === undefined) continue
            for (const m of messages) {
              const offset = BigInt(m.offset)
              if (offset < next || m.isControlRecord) continue // the batch's earlier records
              onRecord(partition, m)
              read += 1
              next = offset + 1n
            }
            pending.set(partition, next)
          }
        }
      }
    }
  } finally {
    await cluster.disconnect()
  }
}

// --- produce-consume -------------------------------------------------------------------------

async function produceConsume(args, emit) {
  const deadline = Date.now() + TIMEOUT_MS
  const kafka = client(args)
  const partitionOf = new Map() // i -> partition the default partitioner chose
  const createPartitioner = options => {
    const partitioner = Partitioners.DefaultPartitioner(options)
    return call => {
      const partition = partitioner(call)
      partitionOf.set(Number(String(call.message.value).slice('value-'.length)), partition)
      return partition
    }
  }
  await withConnected(kafka.producer({ createPartitioner }), async producer => {
    const messages = []
    for (let i = 0; i < args.count; i++) {
      const { key, value, headers, timestamp } = common.wantRecord(args, i)
      // kafkajs headers: an object, written in key order.
      messages.push({ key, value, headers: Object.fromEntries(headers), timestamp: String(timestamp) })
    }
    // One send: kafkajs groups the messages by partition, in order, one batch per partition,
    // and reports each partition's base offset.
    const results = await producer.send({
      topic: args.topic,
      compression: COMPRESSION[args.compression],
      acks: -1,
      messages,
    })
    const base = new Map(results.map(r => [r.partition, BigInt(r.baseOffset)]))
    const rank = new Map()
    for (let i = 0; i < args.count; i++) {
      const p = partitionOf.get(i)
      if (p === undefined || !base.has(p)) throw new Error(`no delivery report for record ${i}`)
      const n = rank.get(p) || 0n
      rank.set(p, n + 1n)
      emit({ event: 'produced', i, partition: p, offset: Number(base.get(p) + n) })
    }
  })

  const threshold = args.startTs + Math.floor(args.count / 2) * 1000
  const [offsets, byTime] = await withConnected(kafka.admin(), async admin => [
    await admin.fetchTopicOffsets(args.topic), // [{partition, low, high}]
    // ListOffsets by timestamp; kafkajs answers the end offset where no record is that late.
    await admin.fetchTopicOffsetsByTimestamp(args.topic, threshold),
  ])
  const high = new Map(offsets.map(o => [o.partition, BigInt(o.high)]))
  const printer = phase => (partition, m) =>
    emit({
      event: 'record',
      phase,
      partition,
      offset: Number(m.offset),
      key: common.text(m.key),
      value: common.text(m.value),
      headers: Object.entries(m.headers).flatMap(([k, v]) =>
        (Array.isArray(v) ? v : [v]).map(one => [k, common.text(one)])
      ),
      timestamp: Number(m.timestamp),
    })
  const beginning = new Map(offsets.map(o => [o.partition, BigInt(o.low)]))
  await consume(args, 'beginning', { starts: beginning, ends: high }, deadline, printer('beginning'))

  const fromOffset = new Map([...high].filter(([, end]) => end > 1n).map(([p]) => [p, 1n]))
  await consume(args, 'from_offset', { starts: fromOffset, ends: high }, deadline, printer('from_offset'))

  const fromTs = new Map()
  for (const { partition, offset } of byTime) {
    if (BigInt(offset) >= 0n) fromTs.set(partition, BigInt(offset))
  }
  await consume(args, 'from_timestamp', { starts: fromTs, ends: high }, deadline, printer('from_timestamp'))
}

// --- acks ------------------------------------------------------------------------------------

const ACKS_PRODUCERS = [
  { name: 'acks0', acks: 0, idempotent: false },
  { name: 'acks1', acks: 1, idempotent: false },
  { name: 'acksall', acks: -1, idempotent: false },
  { name: 'idempotent', acks: -1, idempotent: true },
]

async function acks(args, emit) {
  const deadline = Date.now() + TIMEOUT_MS
  const kafka = client(args)
  for (const [partition, { name, acks, idempotent }] of ACKS_PRODUCERS.entries()) {
    const options = idempotent ? { idempotent: true, maxInFlightRequests: 1 } : {}
    await withConnected(kafka.producer(options), async producer => {
      for (let i = 0; i < 10; i++) {
        const results = await producer.send({
          topic: args.topic,
          acks,
          messages: [{ key: `k${i}`, value: `${name}-${i}`, partition }],
        })
        // acks=0: no answer, so kafkajs reports no record metadata at all.
        const result = results.find(r => r.partition === partition)
        const offset = result === undefined ? -1 : Number(result.baseOffset)
        emit({ event: 'produced', producer: name, i, partition, offset })
      }
    })
  }
  const starts = new Map(ACKS_PRODUCERS.map((_, p) => [p, 0n]))
  await consume(args, 'acks', { starts, total: 40 }, deadline, (partition, m) =>
    emit({ event: 'record', partition, offset: Number(m.offset), value: common.text(m.value) })
  )
}

// --- large -----------------------------------------------------------------------------------

async function large(args, emit) {
  const deadline = Date.now() + TIMEOUT_MS
  const kafka = client(args)
  // kafkajs checks no record or request size before sending: the broker decides.
  await withConnected(kafka.producer(), async producer => {
    const send = size =>
      producer.send({
        topic: args.topic,
        acks: -1,
        messages: [{ key: 'big', value: common.largeValue(size), partition: 0 }],
      })
    const [near] = await send(LARGE.near)
    emit({ event: 'produced', step: 'near-limit', partition: near.partition, offset: Number(near.baseOffset) })
    try {
      const [over] = await send(LARGE.over)
      emit({ event: 'produced', step: 'over-limit', partition: over.partition, offset: Number(over.baseOffset) })
    } catch (e) {
      errorLine(emit, 'over-limit', e)
    }
  })
  const offsets = await withConnected(kafka.admin(), admin => admin.fetchTopicOffsets(args.topic))
  const high = new Map(offsets.map(o => [o.partition, BigInt(o.high)]))
  await consume(args, 'large', { starts: new Map([[0, 0n]]), ends: high }, deadline, (_, m) =>
    emit({ event: 'record', offset: Number(m.offset), size: m.value.length, sha256: common.sha256(m.value) })
  )
}

// --- admin -----------------------------------------------------------------------------------

// admin.deleteTopicRecords() resolves with nothing; the DeleteRecords answers it receives are
// observed here (not changed) for the low watermark they report.
const deleteRecordsAnswers = []
const deleteRecords = Broker.prototype.deleteRecords
Broker.prototype.deleteRecords = async function (request) {
  const answer = await deleteRecords.call(this, request)
  deleteRecordsAnswers.push(answer)
  return answer
}

async function admin(args, emit) {
  const kafka = client(args)
  const topic = args.topic
  const resource = { type: ConfigResourceTypes.TOPIC, name: topic }
  await withConnected(kafka.admin(), async admin => {
    const step = async (name, body) => {
      try {
        emit({ event: 'admin', step: name, ...(await body()) })
      } catch (e) {
        emit({ event: 'admin', step: name, error: `${e.name}: ${e.message}` })
      }
    }
    // Metadata shows a topic created or deleted a little after the answer (Kafka's KRaft).
    // Metadata shows a created or deleted topic a little after the answer (Kafka with KRaft).
    const listed = async () => (await admin.listTopics()).includes(topic)
    const configs = async () => {
      const { resources } = await admin.describeConfigs({ resources: [resource], includeSynonyms: false })
      const entries = resources[0].configEntries
      const picked = { _entries: entries.length }
      for (const e of entries) {
        if (ADMIN.picked.includes(e.configName)) {
          picked[e.configName] = { value: e.configValue, source: CONFIG_SOURCES[e.configSource] }
        }
      }
      return { configs: picked }
    }

    await step('createTopics', async () => {
      const configEntries = Object.entries(ADMIN.created).map(([name, value]) => ({ name, value }))
      await admin.createTopics({
        topics: [{ topic, numPartitions: 3, replicationFactor: 1, configEntries }],
        waitForLeaders: true,
      })
      return { listed: await common.until(listed, found => found) }
    })
    await step('describeConfigs', configs)
    await step('alterConfigs', async () => {
      // kafkajs has only the older AlterConfigs: the complete set of the topic's configs.
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ ...resource, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
      })
      return configs()
    })
    await step('createPartitions', async () => {
      await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
      // Kafka answers CreatePartitions before its metadata shows the new partition.
      const count = async () => (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length
      return { partitions: await common.until(count, n => n === 4) }
    })
    await step('produce', async () => {
      const messages = []
      for (let i = 0; i < 10; i++) {
        messages.push({ value: `admin-${i}`, partition: 0, timestamp: String(ADMIN.startTs + i * 1000) })
      }
      const results = await withConnected(kafka.producer(), producer =>
        producer.send({ topic, acks: -1, messages })
      )
      const base = Number(results.find(r => r.partition === 0).baseOffset)
      return { offsets: messages.map((_, i) => base + i) }
    })
    await step('deleteRecords', async () => {
      deleteRecordsAnswers.length = 0
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] })
      const answered = deleteRecordsAnswers
        .flatMap(a => a.topics.filter(t => t.topic === topic).flatMap(t => t.partitions))
        .find(p => p.partition === 0)
      const offsets = await admin.fetchTopicOffsets(topic)
      return {
        low_watermark: answered === undefined ? null : Number(answered.lowWatermark),
        earliest_after: Number(offsets.find(o => o.partition === 0).low),
      }
    })
    await step('listOffsets', async () => {
      const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, ADMIN.startTs + 7000)
      return { for_timestamp: Number(byTime.find(o => o.partition === 0).offset) }
    })
    await step('deleteTopics', async () => {
      await admin.deleteTopics({ topics: [topic] })
      return { listed: await common.until(listed, found => !found) }
    })
  })
}

// --- errors ----------------------------------------------------------------------------------

async function errors(args, emit) {
  // kafkajs has no delivery timeout: its retry budget bounds a send to about 5 s instead
  // (200 + 400 + 800 + 1600 + 2000 ms of backoff, each randomized by 20 %).
  const kafka = client(args, { retries: 5, initialRetryTime: 200, maxRetryTime: 2000 })
  await withConnected(kafka.producer({ allowAutoTopicCreation: false }), async producer => {
    try {
      await producer.send({ topic: `${args.topic}-missing`, acks: -1, messages: [{ value: 'lost' }] })
      emit({ event: 'produced', step: 'unknown-topic' })
    } catch (e) {
      errorLine(emit, 'unknown-topic', e)
    }
  })
  await withConnected(kafka.admin(), async admin => {
    try {
      await admin.createTopics({
        topics: [
          {
            topic: `${args.topic}-bad`,
            numPartitions: 1,
            replicationFactor: 1,
            configEntries: [{ name: 'retention.ms', value: 'not-a-number' }],
          },
        ],
      })
      emit({ event: 'admin', step: 'invalid-config', created: true })
    } catch (e) {
      errorLine(emit, 'invalid-config', e)
    }
  })
}

const SCENARIOS = { 'produce-consume': produceConsume, acks, large, admin, errors }

common.run(async argv => {
  for (const args of common.parseRuns(argv)) {
    await SCENARIOS[args.scenario](args, common.emitter(args.label))
  }
})
