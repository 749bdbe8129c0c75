import { describe, expect, it } from 'vitest';
import { canSeeGroup, navItems, permissions } from './roles';

describe('role-based navigation', () => {
  it('admin sees every page', () => {
    expect(navItems('admin').map((i) => i.label)).toEqual(
      ['Overview', 'Instance groups', 'Instances', 'Engine caches', 'Storages', 'Accounts', 'What-if capacity']);
  });
  it('operator sees everything but accounts', () => {
    expect(navItems('operator').map((i) => i.path)).toEqual(['/', '/groups', '/instances', '/engine', '/storages', '/whatif']);
  });
  it('tenant sees no storages, accounts or what-if', () => {
    const paths = navItems('tenant').map((i) => i.path);
    expect(paths).toEqual(['/', '/groups', '/instances']);
    expect(permissions('tenant').writeGroups).toBe(false);
  });
  it('a tenant sees only the groups in its token', () => {
    const s = { user: 't', token: 'x', role: 'tenant' as const, groups: ['a'] };
    expect(canSeeGroup(s, 'a')).toBe(true);
    expect(canSeeGroup(s, 'b')).toBe(false);
    expect(canSeeGroup({ ...s, role: 'operator' }, 'b')).toBe(true);
  });
});
