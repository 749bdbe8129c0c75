import { useRef, useState, type ChangeEvent, type FormEvent } from 'react';
import {
  ActionGroup, Alert, Button, Form, FormGroup, Label, TextArea,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import CheckIcon from '@patternfly/react-icons/dist/esm/icons/check-icon';
import TimesIcon from '@patternfly/react-icons/dist/esm/icons/times-icon';
import { api, errorMessage } from '../api/client';
import type { BlockKeysResponse } from '../api/types';
import { Helper } from '../components/FormFields';
import { ouia } from '../lib/format';
import { firstMissIndex, promptMissSummary } from '../lib/promptMiss';
import { parseTokenIds } from '../lib/validation';

/** Each block of a prompt: its key, and whether it is cached; the first miss highlighted. */
export function PromptMissResult({ result }: { result: BlockKeysResponse }) {
  const miss = firstMissIndex(result.blocks);
  return (
    <div data-testid="prompt-miss-result">
      <Alert variant={miss < 0 ? 'success' : 'info'} isInline isPlain title={promptMissSummary(result)}
        data-testid="prompt-miss-summary" />
      <p style={{ margin: '8px 0' }}>
        Hash scheme {result.hash_scheme}, block size {result.block_size} tokens, {result.tokens} tokens,
        prefix hit {result.prefix_hit_blocks} block{result.prefix_hit_blocks === 1 ? '' : 's'}.
      </p>
      {result.blocks.length > 0 ? (
        <Table aria-label="Blocks of the prompt" variant="compact" ouiaId="prompt-miss-table" data-testid="prompt-miss-table">
          <Thead>
            <Tr>
              <Th>Block</Th>
              <Th>Key</Th>
              <Th>Hex</Th>
              <Th>Status</Th>
              <Th>Cached</Th>
            </Tr>
          </Thead>
          <Tbody>
            {result.blocks.map((b, i) => {
              const first = i === miss;
              return (
                <Tr key={`${b.block}-${i}`} data-testid={first ? 'first-miss' : `block-row-${b.block}`}
                  data-block={b.block} data-cached={b.cached ? 'true' : 'false'} isRowSelected={first}
                  style={first ? { background: '#fde2e1', boxShadow: 'inset 4px 0 0 #c9190b', fontWeight: 600 } : undefined}>
                  <Td dataLabel="Block">{b.block}</Td>
                  <Td dataLabel="Key"><code>{String(b.key)}</code></Td>
                  <Td dataLabel="Hex"><code>{b.hex}</code></Td>
                  <Td dataLabel="Status">{b.status}{first ? <> <Label color="red" isCompact>first miss</Label></> : null}</Td>
                  <Td dataLabel="Cached" data-testid="block-cached">
                    {b.cached
                      ? <span aria-label="cached"><CheckIcon color="var(--pf-t--global--icon--color--status--success--default)" /> ✓</span>
                      : <span aria-label="not cached"><TimesIcon /> ✗</span>}
                  </Td>
                </Tr>
              );
            })}
          </Tbody>
        </Table>
      ) : null}
    </div>
  );
}

/** "Why does this prompt miss?": token ids (typed or a JSON file) → each block's key and whether it is cached. */
export function PromptMissTool({ instanceId }: { instanceId: string }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [serverError, setServerError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<BlockKeysResponse | null>(null);
  const [fileName, setFileName] = useState<string | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);

  const onFile = async (e: ChangeEvent<HTMLInputElement>) => {
    const f = e.target.files?.[0];
    if (!f) return;
    setFileName(f.name);
    const t = await f.text();
    setText(t);
    setError(undefined);
    try {
      parseTokenIds(t);
    } catch (err) {
      setError(`${f.name}: ${err instanceof Error ? err.message : err}`);
    }
    e.target.value = '';
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setServerError(null);
    let ids: number[];
    try {
      ids = parseTokenIds(text);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      return;
    }
    setError(undefined);
    setBusy(true);
    try {
      setResult(await api.post<BlockKeysResponse>(`/api/v1/meta/instances/${encodeURIComponent(instanceId)}/block-keys`,
        { token_ids: ids }));
    } catch (err) {
      setResult(null);
      setServerError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Form onSubmit={submit} noValidate data-testid="prompt-miss-form" {...ouia('prompt-miss-form')}>
        <FormGroup label="Token ids" fieldId="prompt-miss-tokens" isRequired>
          <TextArea id="prompt-miss-tokens" value={text} onChange={(_e, v) => setText(v)} rows={5} resizeOrientation="vertical"
            validated={error ? 'error' : 'default'} data-testid="prompt-miss-tokens"
            placeholder="1, 2, 3, 4 … or [1, 2, 3, 4] or {&quot;token_ids&quot;: [1, 2, 3]}" />
          <Helper error={error}
            helper="Comma, space or line separated, or a JSON array; the prompt's token ids as the model's tokenizer gave them" />
        </FormGroup>
        <FormGroup label="Prompt file (JSON)" fieldId="prompt-miss-file">
          <input ref={fileRef} id="prompt-miss-file" type="file" accept=".json,application/json,.txt" onChange={onFile}
            data-testid="prompt-miss-file" style={{ display: 'none' }} aria-label="Prompt file (JSON)" />
          <Button variant="secondary" onClick={() => fileRef.current?.click()} data-testid="prompt-miss-upload"
            ouiaId="prompt-miss-upload">Upload JSON file</Button>{' '}
          {fileName ? <span data-testid="prompt-miss-file-name">{fileName}</span> : null}
        </FormGroup>
        <ActionGroup>
          <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy} data-testid="prompt-miss-run"
            ouiaId="prompt-miss-run">Check blocks</Button>
        </ActionGroup>
      </Form>
      {serverError ? <Alert variant="danger" isInline title={serverError} data-testid="prompt-miss-error" style={{ marginTop: 16 }} /> : null}
      {result ? <div style={{ marginTop: 16 }}><PromptMissResult result={result} /></div> : null}
    </>
  );
}
