/**
 * One valid data object for each kind of marketing item, with its optional fields, for the tests
 * of the save tool's schema (gateway) and of the marketing service to start from.
 */

export const KINDS = ['brand', 'brief', 'playbook', 'inspiration', 'batch', 'creative'] as const;
export type Kind = (typeof KINDS)[number];

export const ACCOUNT_ID = '5b1f1c7e-4f7e-4c0e-9a55-0d3e6f1b2c3d';
export const BRIEF_ID = '8c0d2e43-2f1a-4b7e-8f57-6a3b9e0c1d24';

/** A batch variant with every required field. */
export function variant(n: number): Record<string, unknown> {
  return {
    title: `Spring offer ${n}`,
    body: 'Two for one on every plant this week.',
    target_url: `https://shop.example/spring?v=${n}`,
    source_image_url: `https://cdn.example/images/${n}.png`,
  };
}

export function validData(kind: Kind): Record<string, unknown> {
  switch (kind) {
    case 'brand':
      return {
        voice: 'Warm, plain, a little playful.',
        audience: 'Urban gardeners aged 25 to 45.',
        approved_claims: 'Plants arrive healthy or we replace them.',
        restrictions: 'No medical claims.',
        website: 'https://shop.example',
      };
    case 'brief':
      return {
        product: 'Monstera deliciosa, 30 cm',
        audience: 'First-time plant owners',
        offer: '20% off the first order',
        objective: 'clicks',
        landing_page: 'https://shop.example/monstera',
        constraints: 'Mention free delivery only in the body.',
        reference_ids: [ACCOUNT_ID],
      };
    case 'playbook':
      return {
        guidance: 'Lead with the plant, not the discount.',
        evidence: 'account_results',
        source_url: 'https://wiki.example/playbooks/plants',
      };
    case 'inspiration':
      return {
        brand: 'Leafy Co',
        source_url: 'https://leafy.example/ad',
        observed_at: '2026-03-01T09:30:00Z',
        status: 'observed',
        copy: 'Your windowsill deserves better.',
        industry: 'Retail',
        hook: 'Guilt about the windowsill',
      };
    case 'batch':
      return {
        variants: [variant(1), { ...variant(2), hook: 'Spring', offer: '2 for 1' }],
        brief_id: BRIEF_ID,
      };
    case 'creative':
      return {
        account_id: ACCOUNT_ID,
        ad_id: 'ad_123',
        hook: 'Windowsill guilt',
        offer: '20% off',
        brief_id: BRIEF_ID,
        notes: 'Ran in March.',
      };
  }
}
