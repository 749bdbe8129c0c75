import { PageHeader } from '../components/States';

export default function GroupEdit() {
  return <PageHeader title="GroupEdit" />;
}
