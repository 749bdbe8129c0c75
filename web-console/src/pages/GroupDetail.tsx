import { PageHeader } from '../components/States';

export default function GroupDetail() {
  return <PageHeader title="GroupDetail" />;
}
