/**
 * How the services' images are run: the port each is built with and the environment each
 * container is given. images.ts starts the stack with it; deploy/k8s's manifests test checks that
 * the manifests give the same names. No Docker here, so a test can import it without running any.
 */
import type { ServiceName, StackSecrets } from './stack.ts';

/** The port each image is built with (its default PORT and EXPOSE), as deploy/k8s runs them. */
export const IMAGE_PORT: Record<ServiceName, number> = {
  'ads-sandbox': 8080,
  gateway: 8080,
  'upstream-proxy': 50051,
  changes: 50051,
  optimizer: 50051,
  marketing: 50051,
};

/**
 * What one service's container is given besides DATABASE_URL, HOST, PORT and LOG_LEVEL: its keys
 * and its peers' URLs (those not started yet are empty). deploy/k8s gives each Deployment the same
 * names (its manifests test checks it against this).
 */
export function serviceEnv(
  service: ServiceName,
  secrets: StackSecrets,
  urls: Partial<Record<ServiceName, string>>,
): Record<string, string> {
  const grpc = { PRINCIPAL_PUBLIC_KEY: secrets.principalPublicKey };
  const proxy = { UPSTREAM_PROXY_URL: urls['upstream-proxy'] ?? '' };
  switch (service) {
    case 'ads-sandbox':
      return { SANDBOX_ADMIN_TOKEN: secrets.sandboxAdminToken };
    case 'upstream-proxy':
      return {
        ...grpc,
        CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
        OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
        UPSTREAM_URL: urls['ads-sandbox'] ?? '',
        UPSTREAM_CREDENTIAL_KEY: secrets.upstreamCredentialKey,
      };
    case 'changes':
      return {
        ...grpc,
        ...proxy,
        CHANGES_PRIVATE_KEY: secrets.changesPrivateKey,
        OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
        MARKETING_URL: urls.marketing ?? '',
      };
    case 'marketing':
      return {
        ...grpc,
        ...proxy,
        CHANGES_PUBLIC_KEY: secrets.changesPublicKey,
        OPTIMIZER_PUBLIC_KEY: secrets.optimizerPublicKey,
      };
    case 'optimizer':
      return {
        ...grpc,
        ...proxy,
        CHANGES_URL: urls.changes ?? '',
        MARKETING_URL: urls.marketing ?? '',
        OPTIMIZER_PRIVATE_KEY: secrets.optimizerPrivateKey,
      };
    case 'gateway':
      return {
        PRINCIPAL_PRIVATE_KEY: secrets.principalPrivateKey,
        PUBLIC_URL: '',
        ...proxy,
        CHANGES_URL: urls.changes ?? '',
        OPTIMIZER_URL: urls.optimizer ?? '',
        MARKETING_URL: urls.marketing ?? '',
      };
  }
}
