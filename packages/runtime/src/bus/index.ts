/** The bus: the outbox producers write to, the transports that deliver it, the shared inbox. */
export * from './bus.ts';
export * from './inbox.ts';
export * from './kafka-transport.ts';
export * from './outbox.ts';
export * from './pg-transport.ts';
export * from './transport.ts';
