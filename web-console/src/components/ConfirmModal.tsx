import { useState, type ReactNode } from 'react';
import { Alert, Button, Modal, ModalBody, ModalFooter, ModalHeader, ModalVariant } from '@patternfly/react-core';
import { errorMessage } from '../api/client';

/** A confirmation dialog whose action may fail: the failure shows inside it, the dialog stays open. */
export function ConfirmModal({ title, children, confirmLabel, danger, onConfirm, onClose, testId }: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  testId: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      onClose();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal variant={ModalVariant.small} isOpen onClose={onClose} aria-labelledby={`${testId}-title`} data-testid={testId}
      ouiaId={testId}>
      <ModalHeader title={title} labelId={`${testId}-title`} titleIconVariant={danger ? 'warning' : undefined} />
      <ModalBody>
        {children}
        {error ? <Alert variant="danger" isInline title={error} data-testid="modal-error" style={{ marginTop: 16 }} /> : null}
      </ModalBody>
      <ModalFooter>
        <Button variant={danger ? 'danger' : 'primary'} onClick={confirm} isLoading={busy} isDisabled={busy}
          data-testid={`${testId}-confirm`} ouiaId={`${testId}-confirm`}>{confirmLabel}</Button>
        <Button variant="link" onClick={onClose} isDisabled={busy} data-testid={`${testId}-cancel`}
          ouiaId={`${testId}-cancel`}>Cancel</Button>
      </ModalFooter>
    </Modal>
  );
}
