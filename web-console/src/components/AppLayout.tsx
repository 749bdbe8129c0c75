import { Suspense, useState, type ReactNode } from 'react';
import { Link, NavLink, useLocation, useNavigate } from 'react-router-dom';
import {
  Button, Label, LabelGroup, Masthead, MastheadBrand, MastheadContent, MastheadLogo, MastheadMain, MastheadToggle,
  Nav, NavItem, NavList, Page, PageSidebar, PageSidebarBody, PageToggleButton, Toolbar, ToolbarContent,
  ToolbarGroup, ToolbarItem,
} from '@patternfly/react-core';
import BarsIcon from '@patternfly/react-icons/dist/esm/icons/bars-icon';
import UserIcon from '@patternfly/react-icons/dist/esm/icons/user-icon';
import { useAuth, useSession } from '../auth/AuthContext';
import { navItems } from '../auth/roles';
import { Loading } from './States';

/** The brand goes home inside the app (no page reload). */
function HomeLink(props: Record<string, unknown>) {
  return <Link {...props} to="/" />;
}

export function isActive(pathname: string, path: string): boolean {
  return path === '/' ? pathname === '/' : pathname === path || pathname.startsWith(`${path}/`);
}

export function AppNav() {
  const session = useSession();
  const { pathname } = useLocation();
  return (
    <Nav aria-label="Console" ouiaId="console-nav">
      <NavList>
        {navItems(session.role).map((i) => (
          <NavItem key={i.path} isActive={isActive(pathname, i.path)}>
            <NavLink to={i.path} end={i.path === '/'} data-testid={i.testId}>{i.label}</NavLink>
          </NavItem>
        ))}
      </NavList>
    </Nav>
  );
}

export function AppMasthead({ sidebarOpen, onToggle }: { sidebarOpen: boolean; onToggle: () => void }) {
  const session = useSession();
  const { signOut } = useAuth();
  const navigate = useNavigate();
  const out = () => {
    signOut();
    navigate('/login', { replace: true });
  };
  return (
    <Masthead>
      <MastheadMain>
        <MastheadToggle>
          <PageToggleButton isHamburgerButton aria-label="Navigation" isSidebarOpen={sidebarOpen}
            onSidebarToggle={onToggle} data-testid="nav-toggle">
            <BarsIcon />
          </PageToggleButton>
        </MastheadToggle>
        <MastheadBrand>
          <MastheadLogo component={HomeLink} data-testid="brand">
            <span style={{ fontWeight: 700, fontSize: '1.25rem', color: 'var(--pf-t--global--text--color--regular)' }}>
              KVPool console
            </span>
          </MastheadLogo>
        </MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <Toolbar isFullHeight isStatic>
          <ToolbarContent>
            <ToolbarGroup align={{ default: 'alignEnd' }} alignItems="center">
              <ToolbarItem>
                <span data-testid="masthead-user"><UserIcon /> {session.user}</span>
              </ToolbarItem>
              <ToolbarItem>
                <Label color={session.role === 'admin' ? 'red' : session.role === 'operator' ? 'orange' : 'blue'}
                  data-testid="masthead-role">{session.role}</Label>
              </ToolbarItem>
              {session.role === 'tenant' || session.groups.length > 0 ? (
                <ToolbarItem>
                  <LabelGroup categoryName="Groups" numLabels={4} data-testid="masthead-groups">
                    {session.groups.length === 0
                      ? <Label variant="outline">none</Label>
                      : session.groups.map((g) => <Label key={g} variant="outline">{g}</Label>)}
                  </LabelGroup>
                </ToolbarItem>
              ) : null}
              <ToolbarItem>
                <Button variant="secondary" onClick={out} data-testid="sign-out" ouiaId="sign-out">Sign out</Button>
              </ToolbarItem>
            </ToolbarGroup>
          </ToolbarContent>
        </Toolbar>
      </MastheadContent>
    </Masthead>
  );
}

export function AppLayout({ children }: { children: ReactNode }) {
  const [open, setOpen] = useState(() => typeof window === 'undefined' || window.innerWidth >= 1000);
  const sidebar = (
    <PageSidebar isSidebarOpen={open}>
      <PageSidebarBody>
        <AppNav />
      </PageSidebarBody>
    </PageSidebar>
  );
  return (
    <Page masthead={<AppMasthead sidebarOpen={open} onToggle={() => setOpen((o) => !o)} />} sidebar={sidebar}>
      <Suspense fallback={<Loading what="Loading page" />}>{children}</Suspense>
    </Page>
  );
}
