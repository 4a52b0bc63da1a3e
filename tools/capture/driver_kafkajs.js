// kafkajs 2.2.4 driver for tools/capture: producer (plain, idempotent, gzip: the only codec
// kafkajs has built in), a transactional producer with sendOffsets, a group consumer and the
// admin client. Every step is bounded; a failing step is only reported, since the bytes on the
// wire are the product, not the outcome.
//
// Usage: node driver_kafkajs.js 127.0.0.1:PORT
'use strict';

const { Kafka, CompressionTypes, ConfigResourceTypes, AclResourceTypes, AclOperationTypes,
  AclPermissionTypes, ResourcePatternTypes, logLevel } = require('kafkajs');

const CODECS = 'kafkajs-codecs';
const TXN = 'kafkajs-txn';
const ADMIN = 'kafkajs-admin';
const GROUP = 'kafkajs-group';
const STEP_MS = 20000;
// Values repeat a phrase so that gzip actually shrinks them (still small).
const FILLER = ' millpond golden bytes'.repeat(6);

const kafka = new Kafka({ clientId: 'millpond-capture-kafkajs', brokers: [process.argv[2]],
  logLevel: logLevel.WARN, retry: { retries: 3 } });

function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function step(name, body) {
  const t0 = Date.now();
  try {
    await withTimeout(body(), STEP_MS);
    console.log(`ok   ${name.padEnd(28)} ${Date.now() - t0} ms`);
  } catch (e) {
    console.log(`fail ${name.padEnd(28)} ${e && e.message}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function produce(options, topic, values, compression) {
  const producer = kafka.producer(options);
  await producer.connect();
  try {
    await producer.send({ topic, compression, acks: options.acks,
      messages: values.map((v, i) => ({ key: `k${i}`, value: v, partition: 0 })) });
  } finally {
    await producer.disconnect();
  }
}

// Consume from a group until `want` messages arrived or time ran out, then commit and leave.
async function consumeGroup(groupId, topic, want, ms) {
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 1000 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let seen = 0;
    await consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
      seen += 1;
      await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
    } });
    const deadline = Date.now() + ms;
    while (seen < want && Date.now() < deadline) {
      await sleep(200);
    }
    await sleep(2500); // let heartbeats go out
  } finally {
    await consumer.disconnect();
  }
}

async function transactions() {
  const producer = kafka.producer({ transactionalId: 'kafkajs-txn-1', idempotent: true,
    maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const txn = await producer.transaction();
    await txn.send({ topic: TXN, compression: CompressionTypes.GZIP,
      messages: [0, 1, 2].map((i) => ({ key: `tk${i}`, value: `committed-${i}${FILLER}`, partition: 0 })) });
    await txn.sendOffsets({ consumerGroupId: 'kafkajs-txn-group',
      topics: [{ topic: CODECS, partitions: [{ partition: 0, offset: '2' }] }] });
    await txn.commit();
    const txn2 = await producer.transaction();
    await txn2.send({ topic: TXN, messages: [{ value: 'aborted', partition: 0 }] });
    await txn2.abort();
  } finally {
    await producer.disconnect();
  }
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await step('createTopics', () => admin.createTopics({ waitForLeaders: true, topics: [
      { topic: CODECS, numPartitions: 1, replicationFactor: 1 },
      { topic: TXN, numPartitions: 1, replicationFactor: 1 },
      { topic: ADMIN, numPartitions: 2, replicationFactor: 1,
        configEntries: [{ name: 'retention.ms', value: '3600000' }] }] }));
    await step('listTopics', () => admin.listTopics());
    await step('fetchTopicMetadata', () => admin.fetchTopicMetadata({ topics: [CODECS] }));
    await step('describeCluster', () => admin.describeCluster());
    await step('produce none', () => produce({}, CODECS, ['none-v0', 'none-v1', 'none-v2']));
    await step('produce gzip', () => produce({}, CODECS, ['gzip-v0', 'gzip-v1', 'gzip-v2'].map((v) => v + FILLER),
      CompressionTypes.GZIP));
    await step('produce idempotent gzip', () => produce({ idempotent: true, maxInFlightRequests: 1 },
      CODECS, ['idem-v0', 'idem-v1'].map((v) => v + FILLER), CompressionTypes.GZIP));
    await step('produce acks=1', () => produce({ acks: 1 }, CODECS, ['acks1']));
    await step('transactions', transactions);
    await step('group consumer', () => consumeGroup(GROUP, CODECS, 9, STEP_MS - 5000));

    const topicRes = { type: ConfigResourceTypes.TOPIC, name: ADMIN };
    await step('describeConfigs', () => admin.describeConfigs({ includeSynonyms: true,
      resources: [topicRes, { type: ConfigResourceTypes.BROKER, name: '1' }] }));
    await step('alterConfigs', () => admin.alterConfigs({ validateOnly: false, resources: [
      { ...topicRes, configEntries: [{ name: 'retention.ms', value: '7200000' }] }] }));
    await step('createPartitions', () => admin.createPartitions({
      topicPartitions: [{ topic: ADMIN, count: 3 }] }));
    await step('produce admin', () => produce({}, ADMIN, ['v0', 'v1', 'v2', 'v3'],
      CompressionTypes.GZIP));
    await step('fetchTopicOffsets', () => admin.fetchTopicOffsets(ADMIN));
    await step('fetchTopicOffsetsByTimestamp', () => admin.fetchTopicOffsetsByTimestamp(CODECS,
      Date.now() - 60000));
    await step('deleteTopicRecords', () => admin.deleteTopicRecords({ topic: ADMIN,
      partitions: [{ partition: 0, offset: '2' }] }));
    await step('listGroups', () => admin.listGroups());
    await step('describeGroups', () => admin.describeGroups([GROUP]));
    await step('fetchOffsets', () => admin.fetchOffsets({ groupId: GROUP, topics: [CODECS] }));
    await step('setOffsets', () => admin.setOffsets({ groupId: GROUP, topic: CODECS,
      partitions: [{ partition: 0, offset: '1' }] }));
    await step('deleteGroups', () => admin.deleteGroups([GROUP]));
    const acl = { resourceType: AclResourceTypes.TOPIC, resourceName: ADMIN,
      resourcePatternType: ResourcePatternTypes.LITERAL, principal: 'User:dave', host: '*',
      operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW };
    await step('createAcls', () => admin.createAcls({ acl: [acl] }));
    await step('describeAcls', () => admin.describeAcls({ resourceType: AclResourceTypes.TOPIC,
      resourceName: ADMIN, resourcePatternType: ResourcePatternTypes.LITERAL,
      operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }));
    await step('deleteAcls', () => admin.deleteAcls({ filters: [acl] }));
    await step('listPartitionReassignments', () => admin.listPartitionReassignments({}));
    await step('deleteTopics', () => admin.deleteTopics({ topics: [ADMIN] }));
  } finally {
    await admin.disconnect();
  }
  console.log('kafkajs driver done');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
