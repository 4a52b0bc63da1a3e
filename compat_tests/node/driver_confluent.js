#!/usr/bin/env node
// confluent-kafka-javascript driver of millpond's client scenarios (compat_tests/SCENARIOS.md),
// through its node-rdkafka-style API (librdkafka underneath): prints one JSON line per event
// on stdout (tagged with its run's "scenario") and exits 0 when every run ended. Several runs
// share one process:
//   driver_confluent.js SCENARIO FLAGS... [-- SCENARIO FLAGS...]...
//
// Why that API and not its KafkaJS-compatible one: the KafkaJS-style consumer always joins a
// group, while KafkaConsumer.assign() reads by partition with no group protocol, and the
// Producer's delivery reports give every record's own partition and offset. Admin steps use
// its AdminClient; neither admin API has DescribeConfigs or AlterConfigs (1.10.1), so those two
// steps print an error line saying so.
'use strict'

const RdKafka = require('@confluentinc/kafka-javascript')
const common = require('./common')

const { ADMIN, LARGE, TIMEOUT_MS } = common
const { AdminClient, KafkaConsumer, OffsetSpec, Producer } = RdKafka

const REQUEST_TIMEOUT_MS = 10000

function base(args) {
  return { 'bootstrap.servers': args.bootstrap, 'client.id': 'millpond-compat-confluent-js' }
}

// librdkafka's error codes: Kafka's protocol errors as themselves, local ones from -200 to -100.
function kafkaCode(error) {
  const code = error && error.code
  return Number.isInteger(code) && code > -100 ? code : null
}

function errorLine(emit, step, e) {
  emit({ event: 'error', step, code: kafkaCode(e), message: `${e.code}: ${e.message}` })
}

function promised(call) {
  return new Promise((resolve, reject) => call((err, result) => (err ? reject(err) : resolve(result))))
}

// A connected Producer whose send() resolves with the delivery report of one record, or rejects
// with its delivery error.
async function openProducer(args, conf = {}) {
  const producer = new Producer({ ...base(args), dr_cb: true, ...conf })
  const waiting = new Map()
  let next = 0
  producer.on('delivery-report', (err, report) => {
    const settle = waiting.get(report.opaque)
    waiting.delete(report.opaque)
    if (settle) settle(err, report)
  })
  await promised(cb => producer.connect({ timeout: REQUEST_TIMEOUT_MS }, cb))
  producer.setPollInterval(20)
  const send = ({ topic, partition = null, value, key = null, timestamp = null, headers }) =>
    new Promise((resolve, reject) => {
      const opaque = next++
      waiting.set(opaque, (err, report) => (err ? reject(err) : resolve(report)))
      try {
        producer.produce(topic, partition, Buffer.from(value), key, timestamp, opaque, headers)
      } catch (e) {
        waiting.delete(opaque)
        reject(e)
      }
    })
  const close = async () => {
    await promised(cb => producer.flush(TIMEOUT_MS, cb))
    await promised(cb => producer.disconnect(cb))
  }
  return { producer, send, close }
}

async function openConsumer(args) {
  const consumer = new KafkaConsumer(
    {
      ...base(args),
      'group.id': 'millpond-compat-confluent-js-unused', // assign() joins no group
      'enable.auto.commit': false,
      'fetch.max.bytes': 2 * LARGE.maxBytes,
      'max.partition.fetch.bytes': LARGE.maxBytes,
      'receive.message.max.bytes': 4 * LARGE.maxBytes,
    },
    { 'auto.offset.reset': 'earliest' }
  )
  await promised(cb => consumer.connect({ timeout: REQUEST_TIMEOUT_MS }, cb))
  consumer.setDefaultConsumeTimeout(500)
  return consumer
}

async function withConsumer(args, body) {
  const consumer = await openConsumer(args)
  try {
    return await body(consumer)
  } finally {
    await promised(cb => consumer.disconnect(cb))
  }
}

// Reads `starts` (partition -> first offset) of args.topic by assignment, handing every record
// to `onRecord`, until every partition of `ends` (partition -> end offset) reached its end and,
// with `total`, that many records were read; throws at the deadline.
async function consume(consumer, args, phase, { starts, ends = new Map(), total = 0 }, deadline, onRecord) {
  const pending = new Map([...starts].filter(([p, start]) => !ends.has(p) || start < ends.get(p)))
  let read = 0
  const finished = () =>
    read >= total && [...pending.keys()].every(p => !ends.has(p) || pending.get(p) >= ends.get(p))
  if (finished()) return
  consumer.assign([...pending].map(([partition, offset]) => ({ topic: args.topic, partition, offset })))
  try {
    while (!finished()) {
      if (Date.now() > deadline) {
        throw new Error(`${phase}: read ${read} records, offsets ${JSON.stringify([...pending])}: timed out`)
      }
      const messages = await promised(cb => consumer.consume(1000, cb))
      for (const m of messages) {
        const at = pending.get(m.partition)
        if (at === undefined || m.offset < at) continue
        onRecord(m)
        read += 1
        pending.set(m.partition, m.offset + 1)
      }
    }
  } finally {
    consumer.unassign()
  }
}

function headerPairs(headers) {
  // [{name: value}, ...] in order, the value a Buffer.
  return (headers || []).flatMap(h => Object.entries(h).map(([k, v]) => [k, common.text(v)]))
}

async function watermarks(consumer, args, partitions) {
  const out = new Map()
  for (let p = 0; p < partitions; p++) {
    out.set(p, await promised(cb => consumer.queryWatermarkOffsets(args.topic, p, REQUEST_TIMEOUT_MS, cb)))
  }
  return out // partition -> {lowOffset, highOffset}
}

// --- produce-consume -------------------------------------------------------------------------

async function produceConsume(args, emit) {
  const deadline = Date.now() + TIMEOUT_MS
  const { send, close } = await openProducer(args, { 'compression.codec': args.compression })
  try {
    const reports = []
    for (let i = 0; i < args.count; i++) {
      const { key, value, headers, timestamp } = common.wantRecord(args, i)
      const pairs = headers.map(([k, v]) => ({ [k]: v }))
      reports.push(send({ topic: args.topic, value, key, timestamp, headers: pairs }))
    }
    for (const [i, report] of (await Promise.all(reports)).entries()) {
      emit({ event: 'produced', i, partition: report.partition, offset: report.offset })
    }
  } finally {
    await close()
  }

  await withConsumer(args, async consumer => {
    const marks = await watermarks(consumer, args, args.partitions)
    const ends = new Map([...marks].map(([p, m]) => [p, m.highOffset]))
    const printer = phase => m =>
      emit({
        event: 'record',
        phase,
        partition: m.partition,
        offset: m.offset,
        key: common.text(m.key),
        value: common.text(m.value),
        headers: headerPairs(m.headers),
        timestamp: m.timestamp,
      })
    const beginning = new Map([...marks].map(([p, m]) => [p, m.lowOffset]))
    await consume(consumer, args, 'beginning', { starts: beginning, ends }, deadline, printer('beginning'))

    const fromOffset = new Map([...ends].filter(([, end]) => end > 1).map(([p]) => [p, 1]))
    await consume(consumer, args, 'from_offset', { starts: fromOffset, ends }, deadline, printer('from_offset'))

    const threshold = args.startTs + Math.floor(args.count / 2) * 1000
    const asked = [...ends.keys()].map(partition => ({ topic: args.topic, partition, offset: threshold }))
    const byTime = await promised(cb => consumer.offsetsForTimes(asked, REQUEST_TIMEOUT_MS, cb))
    // librdkafka answers -1 (the end) where no record is that late.
    const fromTs = new Map(byTime.map(({ partition, offset }) => [partition, offset < 0 ? ends.get(partition) : offset]))
    await consume(consumer, args, 'from_timestamp', { starts: fromTs, ends }, deadline, printer('from_timestamp'))
  })
}

// --- acks ------------------------------------------------------------------------------------

const ACKS_PRODUCERS = [
  { name: 'acks0', acks: '0', idempotent: false },
  { name: 'acks1', acks: '1', idempotent: false },
  { name: 'acksall', acks: 'all', idempotent: false },
  { name: 'idempotent', acks: 'all', idempotent: true },
]

async function acks(args, emit) {
  const deadline = Date.now() + TIMEOUT_MS
  for (const [partition, { name, acks, idempotent }] of ACKS_PRODUCERS.entries()) {
    const conf = { acks, 'enable.idempotence': idempotent }
    const { send, close } = await openProducer(args, conf)
    try {
      const reports = []
      for (let i = 0; i < 10; i++) {
        reports.push(send({ topic: args.topic, partition, key: `k${i}`, value: `${name}-${i}` }))
      }
      for (const [i, report] of (await Promise.all(reports)).entries()) {
        // acks=0: librdkafka reports no offset (a negative one).
        const offset = report.offset >= 0 ? report.offset : -1
        emit({ event: 'produced', producer: name, i, partition: report.partition, offset })
      }
    } finally {
      await close()
    }
  }
  const starts = new Map(ACKS_PRODUCERS.map((_, p) => [p, 0]))
  await withConsumer(args, consumer =>
    consume(consumer, args, 'acks', { starts, total: 40 }, deadline, m =>
      emit({ event: 'record', partition: m.partition, offset: m.offset, value: common.text(m.value) })
    )
  )
}

// --- large -----------------------------------------------------------------------------------

async function large(args, emit) {
  const deadline = Date.now() + TIMEOUT_MS
  const { send, close } = await openProducer(args, { 'message.max.bytes': LARGE.maxBytes })
  try {
    const record = size => ({ topic: args.topic, partition: 0, key: 'big', value: common.largeValue(size) })
    const near = await send(record(LARGE.near))
    emit({ event: 'produced', step: 'near-limit', partition: near.partition, offset: near.offset })
    try {
      const over = await send(record(LARGE.over))
      emit({ event: 'produced', step: 'over-limit', partition: over.partition, offset: over.offset })
    } catch (e) {
      errorLine(emit, 'over-limit', e)
    }
  } finally {
    await close()
  }
  await withConsumer(args, async consumer => {
    const marks = await watermarks(consumer, args, 1)
    const ends = new Map([[0, marks.get(0).highOffset]])
    await consume(consumer, args, 'large', { starts: new Map([[0, 0]]), ends }, deadline, m =>
      emit({ event: 'record', offset: m.offset, size: m.value.length, sha256: common.sha256(m.value) })
    )
  })
}

// --- admin -----------------------------------------------------------------------------------

const NO_CONFIGS_API =
  'unsupported: confluent-kafka-javascript has no DescribeConfigs/AlterConfigs in its admin APIs'

async function admin(args, emit) {
  const topic = args.topic
  const client = AdminClient.create(base(args))
  const step = async (name, body) => {
    try {
      emit({ event: 'admin', step: name, ...(await body()) })
    } catch (e) {
      emit({ event: 'admin', step: name, error: `${e.code}: ${e.message}` })
    }
  }
  // Metadata shows a topic created or deleted a little after the answer (Kafka's KRaft).
  // Metadata shows a created or deleted topic a little after the answer (Kafka with KRaft).
  const listed = async () =>
    (await promised(cb => client.listTopics({ timeout: REQUEST_TIMEOUT_MS }, cb))).includes(topic)
  const offsetOf = async spec => {
    const asked = [{ topic, partition: 0, offset: spec }]
    const [answer] = await promised(cb => client.listOffsets(asked, { timeout: REQUEST_TIMEOUT_MS }, cb))
    if (answer.error) throw answer.error
    return answer.offset
  }
  try {
    await step('createTopics', async () => {
      const config = { ...ADMIN.created }
      const spec = { topic, num_partitions: 3, replication_factor: 1, config }
      await promised(cb => client.createTopic(spec, REQUEST_TIMEOUT_MS, cb))
      return { listed: await common.until(listed, found => found) }
    })
    emit({ event: 'admin', step: 'describeConfigs', error: NO_CONFIGS_API })
    emit({ event: 'admin', step: 'alterConfigs', error: NO_CONFIGS_API })
    await step('createPartitions', async () => {
      await promised(cb => client.createPartitions(topic, 4, REQUEST_TIMEOUT_MS, cb))
      // Kafka answers CreatePartitions before its metadata shows the new partition.
      const count = async () =>
        (await promised(cb => client.describeTopics([topic], { timeout: REQUEST_TIMEOUT_MS }, cb)))[0]
          .partitions.length
      return { partitions: await common.until(count, n => n === 4) }
    })
    await step('produce', async () => {
      const { send, close } = await openProducer(args, { acks: 'all' })
      try {
        const reports = []
        for (let i = 0; i < 10; i++) {
          reports.push(send({ topic, partition: 0, value: `admin-${i}`, timestamp: ADMIN.startTs + i * 1000 }))
        }
        return { offsets: (await Promise.all(reports)).map(r => r.offset) }
      } finally {
        await close()
      }
    })
    await step('deleteRecords', async () => {
      const asked = [{ topic, partition: 0, offset: 5 }]
      const [answer] = await promised(cb => client.deleteRecords(asked, { timeout: REQUEST_TIMEOUT_MS }, cb))
      if (answer.error) throw answer.error
      return { low_watermark: answer.lowWatermark, earliest_after: await offsetOf(OffsetSpec.EARLIEST) }
    })
    await step('listOffsets', async () => ({
      for_timestamp: await offsetOf(new OffsetSpec(ADMIN.startTs + 7000)),
    }))
    await step('deleteTopics', async () => {
      await promised(cb => client.deleteTopic(topic, REQUEST_TIMEOUT_MS, cb))
      return { listed: await common.until(listed, found => !found) }
    })
  } finally {
    client.disconnect()
  }
}

// --- errors ----------------------------------------------------------------------------------

async function errors(args, emit) {
  const { send, close } = await openProducer(args, { 'message.timeout.ms': 5000 })
  try {
    const report = await send({ topic: `${args.topic}-missing`, value: 'lost' })
    emit({ event: 'produced', step: 'unknown-topic', partition: report.partition, offset: report.offset })
  } catch (e) {
    errorLine(emit, 'unknown-topic', e)
  } finally {
    await close()
  }
  const client = AdminClient.create(base(args))
  try {
    const config = { 'retention.ms': 'not-a-number' }
    const spec = { topic: `${args.topic}-bad`, num_partitions: 1, replication_factor: 1, config }
    await promised(cb => client.createTopic(spec, REQUEST_TIMEOUT_MS, cb))
    emit({ event: 'admin', step: 'invalid-config', created: true })
  } catch (e) {
    errorLine(emit, 'invalid-config', e)
  } finally {
    client.disconnect()
  }
}

const SCENARIOS = { 'produce-consume': produceConsume, acks, large, admin, errors }

common.run(async argv => {
  for (const args of common.parseRuns(argv)) {
    await SCENARIOS[args.scenario](args, common.emitter(args.label))
  }
})
