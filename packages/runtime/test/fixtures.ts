import type { Principal } from '../src/principal.ts';

/** An editor with read and write, calling through MCP: the principal most runtime tests act as. */
export const EDITOR: Principal = {
  workspaceId: '7d5e4e53-26c9-4b1e-bb1a-0b8e7f1d2c3a',
  credentialId: 'cred-1',
  userId: 'user-1',
  role: 'editor',
  scopes: ['read', 'write'],
  via: 'mcp',
};

/** An admin with read and write, calling through MCP: for the calls that need the admin role. */
export const ADMIN: Principal = { ...EDITOR, role: 'admin' };
