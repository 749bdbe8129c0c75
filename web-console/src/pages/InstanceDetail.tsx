import { PageHeader } from '../components/States';

export default function InstanceDetail() {
  return <PageHeader title="InstanceDetail" />;
}
