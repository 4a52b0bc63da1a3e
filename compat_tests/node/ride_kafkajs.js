#!/usr/bin/env node
// kafkajs side of the leader-failover tests (compat_tests/test_ride_through.py):
//
//   ride_kafkajs.js produce --bootstrap B --topic T --count N --pace-ms P --mark M
//       an idempotent producer (acks=-1) sends the values "0" .. "N-1" to partition 0, one
//       send per value, every P ms; after the M-th send prints {"event": "mark"} (the test
//       then kills the partition's leader); prints
//       {"event": "produced", "acked": [...], "failed": [...], "errors": [...]}.
//   ride_kafkajs.js consume --bootstrap B --topic T --count N --timeout-ms MS
//       a consumer-group member (kafkajs has no assign) reads the topic from its start until
//       it holds N distinct offsets or MS pass; prints
//       {"event": "consumed", "records": [[offset, value], ...]}, rereads included (a
//       group member resumes from the group's committed offset after its coordinator moves).
//
// MILLPOND_DRIVER_DEBUG=1 turns kafkajs' log (stderr) to DEBUG.
'use strict'

const { Kafka, logLevel } = require('kafkajs')
const { run } = require('./common')

const FLAGS = {
  '--bootstrap': 'bootstrap',
  '--topic': 'topic',
  '--count': 'count',
  '--pace-ms': 'paceMs',
  '--mark': 'mark',
  '--timeout-ms': 'timeoutMs',
}

function parseArgs(argv) {
  const [command, ...rest] = argv
  const args = { command, count: 0, paceMs: 0, mark: -1, timeoutMs: 90000 }
  for (let i = 0; i < rest.length; i += 2) {
    const name = FLAGS[rest[i]]
    if (name === undefined || i + 1 >= rest.length) throw new Error(`unexpected argument ${rest[i]}`)
    args[name] = rest[i + 1]
  }
  for (const n of ['count', 'paceMs', 'mark', 'timeoutMs']) args[n] = Number(args[n])
  if (!args.bootstrap || !args.topic) throw new Error('--bootstrap and --topic are required')
  return args
}

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n')
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function kafka(args) {
  return new Kafka({
    clientId: 'millpond-ride-kafkajs',
    brokers: args.bootstrap.split(','),
    logLevel: process.env.MILLPOND_DRIVER_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
    connectionTimeout: 3000,
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
  })
}

async function produce(args) {
  const producer = kafka(args).producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const acked = []
  const failed = []
  const errors = new Set()
  try {
    for (let i = 0; i < args.count; i++) {
      const sent = producer.send({
        topic: args.topic,
        acks: -1,
        messages: [{ value: String(i), partition: 0 }],
      })
      if (i + 1 === args.mark) emit({ event: 'mark' })
      try {
        await sent
        acked.push(i)
      } catch (e) {
        failed.push(i)
        errors.add(String(e))
      }
      await sleep(args.paceMs)
    }
  } finally {
    await producer.disconnect()
  }
  emit({ event: 'produced', acked, failed, errors: [...errors].sort() })
}

async function consume(args) {
  const consumer = kafka(args).consumer({ groupId: `${args.topic}-reader`, maxWaitTimeInMs: 200 })
  await consumer.connect()
  const records = []
  const offsets = new Set()
  let finished
  const done = new Promise(resolve => (finished = resolve))
  const timer = setTimeout(() => finished(), args.timeoutMs)
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        records.push([Number(message.offset), message.value.toString('utf8')])
        offsets.add(message.offset)
        if (offsets.size >= args.count) finished()
      },
    })
    await done
  } finally {
    clearTimeout(timer)
    await consumer.disconnect()
  }
  emit({ event: 'consumed', records })
}

run(async argv => {
  const args = parseArgs(argv)
  if (args.command === 'produce') await produce(args)
  else if (args.command === 'consume') await consume(args)
  else throw new Error(`unknown command ${args.command}`)
})
