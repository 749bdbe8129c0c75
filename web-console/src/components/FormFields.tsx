import type { ReactNode } from 'react';
import {
  FormGroup, FormHelperText, FormSelect, FormSelectOption, HelperText, HelperTextItem, TextInput,
} from '@patternfly/react-core';

/** id and test id of a form field from the form's prefix and the field's (server) name: group + eviction.policy → group-eviction-policy. */
export function fieldId(prefix: string, name: string): string {
  return `${prefix}-${name.replace(/[^A-Za-z0-9_-]+/g, '-')}`;
}

export function Helper({ error, helper, id }: { error?: string; helper?: ReactNode; id?: string }) {
  if (!error && !helper) return null;
  return (
    <FormHelperText>
      <HelperText id={id}>
        {error
          ? <HelperTextItem variant="error" data-testid="field-error">{error}</HelperTextItem>
          : <HelperTextItem>{helper}</HelperTextItem>}
      </HelperText>
    </FormHelperText>
  );
}

interface TextFieldProps {
  prefix: string;
  name: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  error?: string;
  helper?: ReactNode;
  type?: 'text' | 'password' | 'number';
  isRequired?: boolean;
  isDisabled?: boolean;
  placeholder?: string;
  autoComplete?: string;
  inputMode?: 'numeric' | 'decimal' | 'text';
}

export function TextField(p: TextFieldProps) {
  const id = fieldId(p.prefix, p.name);
  return (
    <FormGroup label={p.label} fieldId={id} isRequired={p.isRequired}>
      <TextInput id={id} name={p.name} value={p.value} type={p.type ?? 'text'} onChange={(_e, v) => p.onChange(v)}
        validated={p.error ? 'error' : 'default'} isRequired={p.isRequired} isDisabled={p.isDisabled}
        placeholder={p.placeholder} autoComplete={p.autoComplete ?? 'off'} inputMode={p.inputMode}
        data-testid={id} aria-describedby={p.error || p.helper ? `${id}-helper` : undefined} />
      <Helper error={p.error} helper={p.helper} id={`${id}-helper`} />
    </FormGroup>
  );
}

export function SelectField({ prefix, name, label, value, onChange, options, error, helper, isRequired }: {
  prefix: string; name: string; label: string; value: string; onChange: (v: string) => void;
  options: { value: string; label: string }[]; error?: string; helper?: ReactNode; isRequired?: boolean;
}) {
  const id = fieldId(prefix, name);
  return (
    <FormGroup label={label} fieldId={id} isRequired={isRequired}>
      <FormSelect id={id} name={name} value={value} onChange={(_e, v) => onChange(v)}
        validated={error ? 'error' : 'default'} data-testid={id} ouiaId={id} aria-label={label}>
        {options.map((o) => <FormSelectOption key={o.value} value={o.value} label={o.label} />)}
      </FormSelect>
      <Helper error={error} helper={helper} id={`${id}-helper`} />
    </FormGroup>
  );
}
