import { PageHeader } from '../components/States';

export default function Overview() {
  return <PageHeader title="Overview" />;
}
