import { Label } from '@patternfly/react-core';
import CheckCircleIcon from '@patternfly/react-icons/dist/esm/icons/check-circle-icon';
import ExclamationCircleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-circle-icon';
import QuestionCircleIcon from '@patternfly/react-icons/dist/esm/icons/question-circle-icon';

export function StatusLabel({ status, testId = 'service-status' }: { status: string | undefined; testId?: string }) {
  const s = (status ?? 'UNKNOWN').toUpperCase();
  if (s === 'UP') {
    return <Label color="green" icon={<CheckCircleIcon />} data-testid={testId} data-status="UP">UP</Label>;
  }
  if (s === 'DOWN') {
    return <Label color="red" icon={<ExclamationCircleIcon />} data-testid={testId} data-status="DOWN">DOWN</Label>;
  }
  return <Label color="grey" icon={<QuestionCircleIcon />} data-testid={testId} data-status={s}>{s}</Label>;
}

/** Water level of a usage percentage: ok, soft (eviction runs), hard (writes refused). */
export function LevelLabel({ percent, soft, hard }: { percent: number; soft: number; hard: number }) {
  if (percent >= hard) return <Label color="red" data-testid="level">hard</Label>;
  if (percent >= soft) return <Label color="orange" data-testid="level">soft</Label>;
  return <Label color="green" data-testid="level">ok</Label>;
}
