import { PageHeader } from '../components/States';

export default function Instances() {
  return <PageHeader title="Instances" />;
}
