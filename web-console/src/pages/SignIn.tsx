import { useState, type FormEvent } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router-dom';
import {
  ActionGroup, Alert, Button, Form, FormGroup, FormHelperText, HelperText, HelperTextItem, LoginPage, TextInput,
} from '@patternfly/react-core';
import { ApiError } from '../api/client';
import { safeNext, useAuth } from '../auth/AuthContext';
import { ouia } from '../lib/format';

export default function SignIn() {
  const { session, signIn, expired } = useAuth();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const next = safeNext(params.get('next'));
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [fieldErrors, setFieldErrors] = useState<{ user?: string; password?: string }>({});

  if (session && !busy) {
    return <Navigate to={next} replace />;
  }

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const fe: { user?: string; password?: string } = {};
    if (!user.trim()) fe.user = 'User name is required';
    if (!password) fe.password = 'Password is required';
    setFieldErrors(fe);
    setError(null);
    if (fe.user || fe.password) return;
    setBusy(true);
    try {
      await signIn(user.trim(), password);
      navigate(next, { replace: true });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        setError('Wrong user name or password');
      } else if (err instanceof ApiError && (err.field === 'user' || err.field === 'password')) {
        setFieldErrors({ [err.field]: err.detail });
      } else {
        setError(err instanceof Error ? err.message : String(err));
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <LoginPage loginTitle="Sign in to KVPool" loginSubtitle="Use your KVPool account (admin, operator or tenant)">
      <Form onSubmit={submit} noValidate data-testid="sign-in-form" {...ouia('sign-in-form')}>
        {expired && !error ? (
          <Alert variant="info" isInline isPlain title="Your session expired; sign in again to go on."
            data-testid="session-expired" />
        ) : null}
        {error ? <Alert variant="danger" isInline title={error} data-testid="sign-in-error" /> : null}
        <FormGroup label="User name" isRequired fieldId="signin-user">
          <TextInput id="signin-user" name="user" value={user} onChange={(_e, v) => setUser(v)} autoComplete="username"
            isRequired validated={fieldErrors.user ? 'error' : 'default'} data-testid="sign-in-user" autoFocus />
          {fieldErrors.user ? (
            <FormHelperText><HelperText><HelperTextItem variant="error">{fieldErrors.user}</HelperTextItem></HelperText></FormHelperText>
          ) : null}
        </FormGroup>
        <FormGroup label="Password" isRequired fieldId="signin-password">
          <TextInput id="signin-password" name="password" type="password" value={password}
            onChange={(_e, v) => setPassword(v)} autoComplete="current-password" isRequired
            validated={fieldErrors.password ? 'error' : 'default'} data-testid="sign-in-password" />
          {fieldErrors.password ? (
            <FormHelperText><HelperText><HelperTextItem variant="error">{fieldErrors.password}</HelperTextItem></HelperText></FormHelperText>
          ) : null}
        </FormGroup>
        <ActionGroup>
          <Button type="submit" variant="primary" isBlock isLoading={busy} isDisabled={busy}
            data-testid="sign-in-submit" ouiaId="sign-in-submit">Sign in</Button>
        </ActionGroup>
      </Form>
    </LoginPage>
  );
}
