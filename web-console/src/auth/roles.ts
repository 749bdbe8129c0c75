// What each role may see and do, exactly as the REST API enforces it (control-plane @RolesAllowed):
// admin everything; operator everything but accounts; tenant read-only, its own groups only.
import type { Role, Session } from './session';

export interface Permissions {
  storages: boolean;
  accounts: boolean;
  whatIf: boolean;
  /** create/edit/delete groups and instances */
  writeGroups: boolean;
  /** list every group (a tenant sees only its own) */
  allGroups: boolean;
  /** list every instance engines report for (a tenant reaches its own instances' engine caches from their pages) */
  engineInstances: boolean;
}

export function permissions(role: Role): Permissions {
  switch (role) {
    case 'admin':
      return { storages: true, accounts: true, whatIf: true, writeGroups: true, allGroups: true, engineInstances: true };
    case 'operator':
      return { storages: true, accounts: false, whatIf: true, writeGroups: true, allGroups: true, engineInstances: true };
    default:
      return { storages: false, accounts: false, whatIf: false, writeGroups: false, allGroups: false, engineInstances: false };
  }
}

export interface NavItem {
  path: string;
  label: string;
  testId: string;
}

const ALL: (NavItem & { needs?: keyof Permissions })[] = [
  { path: '/', label: 'Overview', testId: 'nav-overview' },
  { path: '/groups', label: 'Instance groups', testId: 'nav-groups' },
  { path: '/instances', label: 'Instances', testId: 'nav-instances' },
  { path: '/engine', label: 'Engine caches', testId: 'nav-engine', needs: 'engineInstances' },
  { path: '/storages', label: 'Storages', testId: 'nav-storages', needs: 'storages' },
  { path: '/accounts', label: 'Accounts', testId: 'nav-accounts', needs: 'accounts' },
  { path: '/whatif', label: 'What-if capacity', testId: 'nav-whatif', needs: 'whatIf' },
];

export function navItems(role: Role): NavItem[] {
  const p = permissions(role);
  return ALL.filter((i) => !i.needs || p[i.needs]).map(({ path, label, testId }) => ({ path, label, testId }));
}

/** Whether the session may look at this group at all (a tenant: only the groups in its token). */
export function canSeeGroup(s: Session, group: string): boolean {
  return permissions(s.role).allGroups || s.groups.includes(group);
}
