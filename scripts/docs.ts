/** `npm run docs`: writes docs/tools.md from the tool catalogue. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@adsmcp/testkit/stack';
import { gatewayCatalogue } from '../services/gateway/src/catalogue/tools/index.ts';
import { renderToolReference } from '../services/gateway/src/catalogue/tools-doc.ts';

const file = join(REPO_ROOT, 'docs', 'tools.md');
writeFileSync(file, renderToolReference(gatewayCatalogue()));
process.stdout.write(`wrote ${file}\n`);
