/**
 * A Kafka cluster id, as the storage tool's `format -t <id>` takes it: 16 random bytes in URL-safe
 * base64 without padding, as `kafka-storage.sh random-uuid` prints, and, as Kafka's own ids, never
 * starting with '-'. The storage tool reads an id that starts with '-' as an option and fails
 * ("argument --cluster-id/-t: expected one argument"): one random id in 64 does, so a broker
 * formatted with a plain random id fails to start one time in 64.
 *
 * Two forms of the one rule: `clusterId()` for the brokers started as processes here
 * (kafka-broker.ts), `CLUSTER_ID_SH` for the container image's shell entrypoint (kafka-container.ts).
 */
import { randomBytes } from 'node:crypto';

export function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** A POSIX shell function, `new_cluster_id`, that prints one id as `clusterId()` makes them. */
export const CLUSTER_ID_SH = `new_cluster_id() {
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    case "$id" in
      -*) ;;
      *) printf '%s\\n' "$id"; return 0 ;;
    esac
  done
}`;
